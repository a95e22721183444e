/**
 * Canonical JSON (RFC 8785 JCS) and the SHA-256 digests of the wire profile. WebCrypto is
 * used for SHA-256: it is native in workerd and in Node, and needs no import.
 */
import { toHex, utf8 } from "./encoding.js";

export const SHA256_PREFIX = "sha256:";

const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * RFC 8785 canonical form of a JSON value. Throws on what JSON cannot carry (non-finite numbers,
 * lone surrogates, functions, cycles through depth). ECMAScript's own `JSON.stringify` already
 * gives RFC 8785's number and string forms; what is added is the key order (UTF-16 code units,
 * which is what `Array.prototype.sort` compares) and the refusals. Written here rather than taken
 * from `canonicalize` because it runs on the verification hot path, where the library's per-call
 * cost was measured at ~2 µs a value in workerd; the tests check it against `canonicalize`.
 */
export function jcs(value: unknown, depth = 0): string {
  switch (typeof value) {
    case "string":
      if (!isWellFormed(value)) throw new TypeError("lone surrogate in string");
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("non-finite number");
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (depth > 512) throw new TypeError("nesting too deep");
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          const v = value[i];
          out += (i ? "," : "") + (v === undefined || typeof v === "function" || typeof v === "symbol" ? "null" : jcs(v, depth + 1));
        }
        return out + "]";
      }
      const obj = value as Record<string, unknown>;
      let out = "{";
      for (const key of Object.keys(obj).sort()) {
        const v = obj[key];
        if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
        out += (out.length > 1 ? "," : "") + jcs(key) + ":" + jcs(v, depth + 1);
      }
      return out + "}";
    }
    default:
      throw new TypeError(`${typeof value} has no JSON form`);
  }
}

// Plain promise chains rather than async functions, one reaction each: these run three times per verification.
const digest = (data: Uint8Array | string): Promise<ArrayBuffer> => crypto.subtle.digest("SHA-256", typeof data === "string" ? utf8(data) : data);

export function sha256(data: Uint8Array | string): Promise<Uint8Array> {
  return digest(data).then((d) => new Uint8Array(d));
}

export function sha256Hex(data: Uint8Array | string): Promise<string> {
  return digest(data).then((d) => toHex(new Uint8Array(d)));
}

/** `sha256:` + hex of the digest of the canonical form: the profile's request/response hashes. */
export function prefixedDigest(canonicalText: string): Promise<string> {
  return digest(canonicalText).then((d) => SHA256_PREFIX + toHex(new Uint8Array(d)));
}
