import { describe, expect, it } from "vitest";
import wycheproof from "../../../shared/vectors-external/wycheproof/ed25519_test.json" with { type: "json" };
import rfc8032 from "../../../shared/vectors-external/rfc8032/rfc8032-ed25519.json" with { type: "json" };
import { webCryptoVerifier } from "../../worker/protocol/ed25519.js";
import { fromHex } from "../../worker/protocol/encoding.js";

describe("WebCrypto Ed25519 inside workerd", () => {
  const verifier = webCryptoVerifier();

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
