/**
 * Canonical JSON (RFC 8785 JCS) and the SHA-256 digests of the wire profile. WebCrypto is
 * used for SHA-256: it is native in workerd and in Node, and needs no import.
 */
import canonicalize from "canonicalize";
import { toHex, utf8 } from "./encoding.js";

export const SHA256_PREFIX = "sha256:";

/** RFC 8785 canonical form. Throws on values JSON cannot carry (NaN, lone surrogates, …). */
export function jcs(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError("value has no JSON form");
  return out;
}

export async function sha256(data: Uint8Array | string): Promise<Uint8Array> {
  const bytes = typeof data === "string" ? utf8(data) : data;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  return toHex(await sha256(data));
}

/** `sha256:` + hex of the digest of the canonical form: the profile's request/response hashes. */
export async function prefixedDigest(canonicalText: string): Promise<string> {
  return SHA256_PREFIX + (await sha256Hex(canonicalText));
}
