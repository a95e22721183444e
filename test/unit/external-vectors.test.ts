import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { jcs } from "../../worker/protocol/digest.js";
import { nobleVerifier, publicKeyFromSeed, signWithSeed, webCryptoVerifier } from "../../worker/protocol/ed25519.js";
import { fromHex, toHex } from "../../worker/protocol/encoding.js";
import { EXTERNAL_VECTORS } from "../support/paths.js";

const wycheproof = JSON.parse(readFileSync(resolve(EXTERNAL_VECTORS, "wycheproof/ed25519_test.json"), "utf8"));
const rfc8032: { priv: string; pub: string; msg: string; sig: string }[] = JSON.parse(
  readFileSync(resolve(EXTERNAL_VECTORS, "rfc8032/rfc8032-ed25519.json"), "utf8"),
);
const cases = wycheproof.testGroups.flatMap((g: { publicKey: { pk: string }; tests: { tcId: number; msg: string; sig: string; result: string; comment: string }[] }) =>
  g.tests.map((t) => ({ ...t, pk: g.publicKey.pk })),
);

describe("Wycheproof Ed25519 (151 cases)", () => {
  it("has all 151 cases", () => expect(cases).toHaveLength(151));
  for (const [name, verifier] of [["@noble/ed25519 zip215:false", nobleVerifier], ["Node WebCrypto", webCryptoVerifier()]] as const) {
    it(`${name} matches the expected result of every case`, async () => {
      const mismatches: number[] = [];
      for (const t of cases) {
        const sig = fromHex(t.sig) ?? new Uint8Array(0);
        const ok = await verifier.verify(fromHex(t.pk)!, `wp-${t.pk}`, sig, fromHex(t.msg)!);
        if (ok !== (t.result === "valid")) mismatches.push(t.tcId);
      }
      expect(mismatches).toEqual([]);
    });
  }
});

describe("RFC 8032 §7.1 vectors", () => {
  it.each(rfc8032.map((v, i) => [i, v] as const))("vector %i: public key, signature and verification agree", async (_i, v) => {
    const seed = fromHex(v.priv)!;
    expect(toHex(publicKeyFromSeed(seed))).toBe(v.pub);
    expect(toHex(signWithSeed(fromHex(v.msg)!, seed))).toBe(v.sig);
    expect(await nobleVerifier.verify(fromHex(v.pub)!, v.pub, fromHex(v.sig)!, fromHex(v.msg)!)).toBe(true);
  });
});

describe("RFC 8785 JCS input/output pairs", () => {
  const dir = resolve(EXTERNAL_VECTORS, "jcs");
  const files = readdirSync(resolve(dir, "input")).sort();
  it("has the six pairs", () => expect(files).toHaveLength(6));
  it.each(files)("%s canonicalises byte for byte", (file) => {
    const input = JSON.parse(readFileSync(resolve(dir, "input", file), "utf8"));
    const expected = readFileSync(resolve(dir, "output", file));
    expect(Buffer.from(jcs(input), "utf8").equals(expected)).toBe(true);
  });
});
