/**
 * Field 7, `receipt`: the legacy HMAC-SHA256 of the 0.4.1 reference implementation, truncated
 * to 32 hex, over the CCS §4.2 signing payload. The draft describes the payload as each field's
 * string representation, Python-style, UTF-8 encoded, and extended with the v1.3 fields when
 * they are present. countersign's reading, fixed here: the values of fields 1–6 and 8–21 in
 * Figure 4 order (trace_id, verdict, timestamp, tool, params_hash, rule_summary, verified_at,
 * block_reason, request_hash, response_hash, runtime_context_hash, action, config_hash, issuer,
 * audience, nonce, sequence, issued_at, expires_at, max_clock_skew) joined by "|"; numbers in
 * Python's `str()` form (a float time always has a fraction: 1796000000.0; an integer field,
 * `sequence`, has none). Field 7 cannot cover itself and field 22 comes after it. The value is
 * covered by the Ed25519 signature and is never trusted on its own.
 */
import type { UnsignedReceipt } from "../receipt.js";

/**
 * Python's `repr(float)` of a finite number: the same shortest round-trip digits as ECMAScript,
 * laid out as Python does (fixed notation for exponents -4..15 with a `.0` on integral values,
 * else `d.ddde+XX`).
 */
export function pythonFloat(x: number): string {
  if (!Number.isFinite(x)) throw new TypeError("non-finite number");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = x.toExponential().split("e");
  const exp = Number(expText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  let out: string;
  if (exp >= -5 + 1 && exp < 16) {
    if (exp >= 0) {
      const int = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
      const frac = digits.slice(exp + 1);
      out = `${int}.${frac || "0"}`;
    } else out = `0.${"0".repeat(-exp - 1)}${digits}`;
  } else {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    out = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return negative ? "-" + out : out;
}

/** The signing payload of the legacy field, as text (its UTF-8 bytes are what is MACed). */
export function legacyPayload(u: Omit<UnsignedReceipt, "receipt">): string {
  const f = pythonFloat;
  return [
    u.trace_id, u.verdict, f(u.timestamp), u.tool, u.params_hash, u.rule_summary, f(u.verified_at), u.block_reason,
    // A SHOULD field the receipt leaves out stands as an empty value; countersign's own receipts carry all of them.
    u.request_hash, u.response_hash ?? "", u.runtime_context_hash ?? "", u.action, u.config_hash, u.issuer, u.audience, u.nonce,
    u.sequence === undefined ? "" : String(u.sequence), f(u.issued_at), f(u.expires_at), u.max_clock_skew === undefined ? "" : f(u.max_clock_skew),
  ].join("|");
}
