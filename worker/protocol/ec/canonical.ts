/**
 * The EC-Agent canonical form, byte for byte what Python writes with
 * `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)`:
 * keys sorted by code point (Python compares str by code point, not by UTF-16 unit), compact
 * separators, everything outside 0x20–0x7e escaped as `\uXXXX` in lowercase hex with surrogate
 * pairs for astral characters, `"`, `\\` and the five short control escapes as Python writes
 * them. Safe integers are written as integers, other finite numbers as Python's `repr(float)`; only
 * non-finite numbers have no canonical form. Which field may hold which type is the schema's
 * business (events, receipts, bundle rows), not the serialiser's.
 */
import { sha256, SHA256_PREFIX } from "../digest.js";
import { toHex, utf8 } from "../encoding.js";

/** Printable ASCII other than `"` and `\\`: written as is, so such a string needs no per-character pass. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** Every code unit written escaped: everything outside 0x20–0x7e, and `"` and `\\`. */
const ESCAPED = /[^\x20\x21\x23-\x5b\x5d-\x7e]/g;
const SHORT: Record<number, string> = { 0x22: '\\"', 0x5c: "\\\\", 0x08: "\\b", 0x0c: "\\f", 0x0a: "\\n", 0x0d: "\\r", 0x09: "\\t" };
/** A code unit's escape, by unit: worked out once per distinct unit in an isolate. */
const ESCAPES: string[] = [];
const escapeOf = (unit: string): string => {
  const c = unit.charCodeAt(0);
  return (ESCAPES[c] ??= SHORT[c] ?? "\\u" + c.toString(16).padStart(4, "0"));
};

function asciiString(s: string): string {
  if (PLAIN_ASCII.test(s)) return '"' + s + '"';
  // Runs of plain characters are copied whole; only the escaped units are visited one by one
  // (a per-character loop over the whole string cost ~110 ms a million non-ASCII characters).
  return '"' + s.replace(ESCAPED, escapeOf) + '"';
}

/**
 * Orders two strings by code point, as Python's `<` on str does. UTF-16 unit order is code point
 * order up to the first differing unit unless a surrogate is involved there; only then are the
 * strings walked by code point.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  const x = a.charCodeAt(i);
  const y = b.charCodeAt(i);
  if ((x < 0xd800 || x > 0xdfff) && (y < 0xd800 || y > 0xdfff)) return x - y;
  // The prefix before i is the same code points in both: walk from the code point holding unit i
  // (one unit back when the prefix ends in a high surrogate it may pair with), not from the start.
  // Walking from the start cost a whole common prefix per comparison, so sorting many long keys
  // that differ only in an astral character after it cost the prefix times n log n.
  const from = i > 0 && (a.charCodeAt(i - 1) & 0xfc00) === 0xd800 ? i - 1 : i;
  return byCodePoint(a.slice(from), b.slice(from));
}

function byCodePoint(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/**
 * Python's `repr(float)`: the shortest digits that round-trip (as JavaScript also picks), written
 * positionally when the decimal exponent is in [-4, 16), else as `d.ddde±XX`.
 */
export function pythonFloat(x: number): string {
  if (!Number.isFinite(x)) throw new TypeError("non-finite numbers have no EC canonical form");
  const [mantissa, exp] = Math.abs(x).toExponential().split("e");
  const e = Number(exp);
  const digits = mantissa.replace(".", "");
  const sign = x < 0 || Object.is(x, -0) ? "-" : "";
  if (e < -4 || e >= 16) return `${sign}${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
  return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
}

export function asciiCanonical(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return asciiString(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("non-finite numbers have no EC canonical form");
      // Beyond ±(2^53 − 1) a number is no exact integer: Python would have read it as a float.
      return Number.isSafeInteger(value) ? String(value) : pythonFloat(value);
    case "object": {
      if (Array.isArray(value)) return "[" + value.map(asciiCanonical).join(",") + "]";
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort(compareCodePoints);
      return "{" + keys.map((k) => asciiString(k) + ":" + asciiCanonical(obj[k])).join(",") + "}";
    }
    default:
      throw new TypeError(`${typeof value} has no EC canonical form`);
  }
}

/**
 * Our domain separators: fixed, versioned ASCII prefixes, each ending in one line feed (0x0a).
 * The paper's own trace separator is published only in its supplementary material, so these
 * are countersign's, and digests made with them are countersign's digests.
 */
export const DOMAINS = {
  trace: "countersign.ec-agent.trace.v1",
  joint: "countersign.ec-agent.joint.v1",
  corpus: "countersign.ec-agent.corpus.v1",
  row: "countersign.ec-agent.row.v1",
  bundle: "countersign.ec-agent.bundle.v1",
  support: "countersign.ec-agent.support.v2",
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
