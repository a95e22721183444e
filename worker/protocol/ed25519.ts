/**
 * Ed25519 behind one interface, RFC 8032 strict in both implementations: WebCrypto (native in
 * workerd and Node; imported keys cached per isolate by fingerprint) and @noble/ed25519 with
 * `zip215: false` (pure JS, for the CLI and cross-checks).
 */
import * as ed from "@noble/ed25519";
import { sha512 } from "@noble/hashes/sha2.js";

ed.hashes.sha512 = sha512;

export interface SignatureVerifier {
  /** True only for a valid signature; any malformed input is simply false. */
  verify(publicKey: Uint8Array, cacheKey: string, signature: Uint8Array, message: Uint8Array): Promise<boolean>;
}

export function webCryptoVerifier(maxCachedKeys = 1024): SignatureVerifier {
  const keys = new Map<string, CryptoKey>();
  const ED25519 = { name: "Ed25519" };
  const importKey = async (publicKey: Uint8Array, cacheKey: string): Promise<CryptoKey> => {
    const key = await crypto.subtle.importKey("raw", publicKey, ED25519, false, ["verify"]);
    if (keys.size >= maxCachedKeys) keys.clear();
    keys.set(cacheKey, key);
    return key;
  };
  const verifyWith = (key: CryptoKey, signature: Uint8Array, message: Uint8Array) =>
    crypto.subtle.verify(ED25519, key, signature, message).catch(() => false);
  return {
    verify(publicKey, cacheKey, signature, message) {
      if (publicKey.length !== 32 || signature.length !== 64) return Promise.resolve(false);
      const cached = keys.get(cacheKey);
      if (cached) return verifyWith(cached, signature, message);
      return importKey(publicKey, cacheKey).then((key) => verifyWith(key, signature, message), () => false);
    },
  };
}

export const nobleVerifier: SignatureVerifier = {
  async verify(publicKey, _cacheKey, signature, message) {
    try {
      return ed.verify(signature, message, publicKey, { zip215: false });
    } catch {
      return false;
    }
  },
};

/** Why a public key may not be pinned, or null when it is a canonical point of large order. */
export function publicKeyProblem(publicKey: Uint8Array): string | null {
  if (publicKey.length !== 32) return `public key must be 32 bytes, got ${publicKey.length}`;
  let point: ed.Point;
  try {
    point = ed.Point.fromBytes(publicKey, false);
  } catch {
    return "public key is not a canonical encoding of a curve point";
  }
  if (point.isSmallOrder()) return "public key is a small-order point";
  return null;
}

export function publicKeyFromSeed(seed: Uint8Array): Uint8Array {
  return ed.getPublicKey(seed);
}

export function signWithSeed(message: Uint8Array, seed: Uint8Array): Uint8Array {
  return ed.sign(message, seed);
}
