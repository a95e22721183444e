/**
 * The EC-Agent canonical form: JSON with sorted keys, compact separators and ASCII escaping
 * (everything outside 0x20–0x7e as `\uXXXX`, lowercase hex, surrogate pairs for astral
 * characters; `"`, `\\` and the five short control escapes as Python writes them), byte for byte what Python's
 * `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)` writes. Only
 * objects, arrays, strings, integers, booleans and null: a non-integer number is refused.
 */
import { sha256, SHA256_PREFIX } from "../digest.js";
import { toHex, utf8 } from "../encoding.js";

const SHORT: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function asciiString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const c = s.charCodeAt(i);
    if (SHORT[ch]) out += SHORT[ch];
    else if (c < 0x20 || c > 0x7e) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += ch;
  }
  return out + '"';
}

export function asciiCanonical(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return asciiString(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isSafeInteger(value)) throw new TypeError("only safe integers are allowed in the EC canonical form");
      return String(value);
    case "object": {
      if (Array.isArray(value)) return "[" + value.map(asciiCanonical).join(",") + "]";
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
      return "{" + keys.map((k) => asciiString(k) + ":" + asciiCanonical(obj[k])).join(",") + "}";
    }
    default:
      throw new TypeError(`${typeof value} has no EC canonical form`);
  }
}

/** Domain separators: fixed, versioned ASCII prefixes, each ending in one line feed (0x0a). */
export const DOMAINS = {
  trace: "countersign.ec-agent.trace.v1",
  joint: "countersign.ec-agent.joint.v1",
  corpus: "countersign.ec-agent.corpus.v1",
} as const;

/** `sha256:` + hex(SHA-256(domain ‖ 0x0a ‖ canonical(value))). */
export async function domainDigest(domain: string, value: unknown): Promise<string> {
  const prefix = utf8(domain + "\n");
  const body = utf8(asciiCanonical(value));
  const all = new Uint8Array(prefix.length + body.length);
  all.set(prefix);
  all.set(body, prefix.length);
  return SHA256_PREFIX + toHex(await sha256(all));
}
