/**
 * The signature check's contract whatever the verifier behind it does: its answer is always a
 * promise (a verifier that throws gives a rejection, never a synchronous throw), a verifier that
 * answers a plain boolean is read as it says, and keys are tried in order.
 */
import { describe, expect, it } from "vitest";
import { pinnedIssuer } from "../../worker/protocol/anchors.js";
import { checkSignature } from "../../worker/protocol/checks/signature.js";
import { webCryptoVerifier, type SignatureVerifier } from "../../worker/protocol/ed25519.js";
import { canonicalReceipt } from "../../worker/protocol/receipt.js";
import { anchorFor, identity, makeReceipt } from "../../vectors/ccs/factory.js";

const NOW = 1_800_000_000;

async function setup() {
  const one = await identity("signature-check/1", "https://issuer.example", "k1");
  const two = await identity("signature-check/2", "https://issuer.example", "k2");
  const { receipt } = await makeReceipt(two, { label: "signature-check", audience: "https://rp.example", issuedAt: NOW, sequence: 1 });
  // Pinned as the admin route pins them: each key with its fingerprint and an open validity window.
  const anchor = anchorFor(one, two);
  const keys = pinnedIssuer({ ...anchor, keys: anchor.keys.map((k) => ({ ...k, fingerprint: k.kid.repeat(32), not_before: null, not_after: null })), pinned_at: NOW } as never).keys;
  return { receipt, keys, signed: canonicalReceipt(receipt).signedBytes };
}

describe("checkSignature", () => {
  it("finds the signing key among several, in order, with the real verifier", async () => {
    const { receipt, keys, signed } = await setup();
    expect(keys.map((k) => k.kid)).toEqual(["k1", "k2"]);
    const tried: string[] = [];
    const real = webCryptoVerifier();
    const watching: SignatureVerifier = { verify: (raw, fp, sig, msg) => (tried.push(fp), real.verify(raw, fp, sig, msg)) };
    const check = await checkSignature(receipt, signed, keys, watching, NOW);
    expect(check).toMatchObject({ kid: "k2", failures: [] });
    expect(tried).toEqual(keys.map((k) => k.fingerprint));
    const forged = await checkSignature({ ...receipt, signature: "0".repeat(128) }, signed, keys, real, NOW);
    expect(forged.failures.map((f) => f.code)).toEqual(["SIGNATURE_INVALID"]);
  });

  it("reads a verifier that answers a plain boolean as it says", async () => {
    const { receipt, keys, signed } = await setup();
    const plain = { verify: (_raw: Uint8Array, fp: string) => fp === keys[1].fingerprint } as unknown as SignatureVerifier;
    expect(await checkSignature(receipt, signed, keys, plain, NOW)).toMatchObject({ kid: "k2", failures: [] });
    const never = { verify: () => false } as unknown as SignatureVerifier;
    expect((await checkSignature(receipt, signed, keys, never, NOW)).failures.map((f) => f.code)).toEqual(["SIGNATURE_INVALID"]);
  });

  it("turns a verifier that throws, on the first key or a later one, into a rejection", async () => {
    const { receipt, keys, signed } = await setup();
    for (const throwsOn of [0, 1]) {
      const throwing: SignatureVerifier = {
        verify: (_raw, fp) => {
          if (fp === keys[throwsOn].fingerprint) throw new Error(`verifier broke on key ${throwsOn}`);
          return Promise.resolve(false);
        },
      };
      let answer: Promise<unknown> | undefined;
      expect(() => (answer = checkSignature(receipt, signed, keys, throwing, NOW))).not.toThrow();
      await expect(answer).rejects.toThrow(`verifier broke on key ${throwsOn}`);
    }
  });
});
