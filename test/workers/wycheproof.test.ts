import { describe, expect, inject, it } from "vitest";
import { webCryptoVerifier } from "../../worker/protocol/ed25519.js";
import { fromHex } from "../../worker/protocol/encoding.js";

interface WycheproofFile {
  testGroups: { publicKey: { pk: string }; tests: { tcId: number; msg: string; sig: string; result: string }[] }[];
}
declare module "vitest" {
  interface ProvidedContext {
    wycheproof: WycheproofFile;
    rfc8032: { priv: string; pub: string; msg: string; sig: string }[];
  }
}

describe("WebCrypto Ed25519 inside workerd", () => {
  const verifier = webCryptoVerifier();
  const wycheproof = inject("wycheproof");
  const rfc8032 = inject("rfc8032");

  it("matches the expected result of all 151 Wycheproof cases", async () => {
    const cases = wycheproof.testGroups.flatMap((g) => g.tests.map((t) => ({ ...t, pk: g.publicKey.pk })));
    expect(cases).toHaveLength(151);
    const mismatches: number[] = [];
    for (const t of cases) {
      const ok = await verifier.verify(fromHex(t.pk)!, `wp-${t.pk}`, fromHex(t.sig) ?? new Uint8Array(0), fromHex(t.msg)!);
      if (ok !== (t.result === "valid")) mismatches.push(t.tcId);
    }
    expect(mismatches).toEqual([]);
  });

  it("verifies every RFC 8032 vector and refuses each with one bit flipped", async () => {
    for (const v of rfc8032) {
      const sig = fromHex(v.sig)!;
      expect(await verifier.verify(fromHex(v.pub)!, v.pub, sig, fromHex(v.msg)!)).toBe(true);
      sig[0] ^= 1;
      expect(await verifier.verify(fromHex(v.pub)!, v.pub, sig, fromHex(v.msg)!)).toBe(false);
    }
  });
});
