import { keysValidAt, type TrustedKey } from "../anchors.js";
import { failure, type Failure } from "../codes.js";
import type { SignatureVerifier } from "../ed25519.js";
import { fromHex } from "../encoding.js";
import type { Receipt } from "../receipt.js";

export type SignatureCheck = { kid: string; failures: [] } | { kid: null; failures: Failure[] };

/**
 * Step 3 (stateless part): the issuer is pinned, a key of it is valid at `issued_at`, and the
 * signature verifies under one of those keys. Revocation is the ledger's part of step 3.
 */
export async function checkSignature(
  r: Receipt,
  signedBytes: Uint8Array,
  keys: TrustedKey[] | null,
  verifier: SignatureVerifier,
): Promise<SignatureCheck> {
  if (keys === null) return { kid: null, failures: [failure("UNTRUSTED_ISSUER", `issuer ${r.issuer} is not pinned`)] };
  const candidates = keysValidAt(keys, r.issued_at);
  const signature = fromHex(r.signature)!;
  const signer = async (among: TrustedKey[]) => {
    for (const key of among) if (await verifier.verify(key.raw, key.fingerprint, signature, signedBytes)) return key;
    return null;
  };
  const key = await signer(candidates);
  if (key) return { kid: key.kid, failures: [] };
  // Off the accepting path only: name a pinned key that signed outside its validity window.
  const outOfWindow = await signer(keys.filter((k) => !candidates.includes(k)));
  if (outOfWindow) {
    return { kid: null, failures: [failure("UNTRUSTED_ISSUER", `signed by key ${outOfWindow.kid}, which is not valid at issued_at ${r.issued_at}`)] };
  }
  if (candidates.length === 0) {
    return { kid: null, failures: [failure("UNTRUSTED_ISSUER", `no pinned key of ${r.issuer} is valid at issued_at ${r.issued_at}`)] };
  }
  return { kid: null, failures: [failure("SIGNATURE_INVALID", `signature does not verify under any pinned key of ${r.issuer} valid at issued_at`)] };
}
