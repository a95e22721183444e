/**
 * The issuing key behind one interface: Ed25519 signatures of the canonical receipt bytes and
 * the legacy HMAC-SHA256 of field 7. The WebCrypto signer imports both keys once and runs natively
 * in workerd and Node; Ed25519 is deterministic, so it gives the same bytes as @noble/ed25519.
 */
import { toBase64Url } from "../encoding.js";
import type { SigningIdentity } from "./identity.js";

export interface ReceiptSigner {
  /** The kid that signs. */
  kid: string;
  sign(message: Uint8Array): Promise<Uint8Array>;
  /** HMAC-SHA256 under the legacy key, full 32 bytes. */
  mac(message: Uint8Array): Promise<Uint8Array>;
}

export function webCryptoSigner(id: Pick<SigningIdentity, "kid" | "seed" | "publicKey" | "legacyHmacKey">): ReceiptSigner {
  const signing = crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", d: toBase64Url(id.seed), x: toBase64Url(id.publicKey) }, { name: "Ed25519" }, false, ["sign"]);
  const hmac = crypto.subtle.importKey("raw", id.legacyHmacKey, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  // A rejected import must not surface as an unhandled rejection before first use.
  signing.catch(() => {});
  hmac.catch(() => {});
  return {
    kid: id.kid,
    sign: async (message) => new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, await signing, message)),
    mac: async (message) => new Uint8Array(await crypto.subtle.sign("HMAC", await hmac, message)),
  };
}
