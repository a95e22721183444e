/**
 * The CCS v1.3 receipt: 22 known fields, 18 of them required and the draft's four SHOULD fields
 * optional, checked strictly (step 0), and its canonical bytes.
 */
import { failure, type Failure } from "./codes.js";
import { HEX16, HEX64, SHA256_REF, utf8, utf8Length } from "./encoding.js";

export type Verdict = "allow" | "deny" | "escalate";

export interface Receipt {
  action: string;
  audience: string;
  block_reason: string;
  config_hash: string;
  expires_at: number;
  issued_at: number;
  issuer: string;
  /** SHOULD field; absent means the draft's default skew, DEFAULT_CLOCK_SKEW. */
  max_clock_skew?: number;
  nonce: string;
  params_hash: string;
  receipt: string;
  request_hash: string;
  /** SHOULD field; absent is read as "" (no response bound). */
  response_hash?: string;
  rule_summary: string;
  /** SHOULD field; absent is read as "" (no runtime context bound). */
  runtime_context_hash?: string;
  /** SHOULD field; absent means no sequence check (the nonce alone guards against replay). */
  sequence?: number;
  signature: string;
  timestamp: number;
  tool: string;
  trace_id: string;
  verdict: Verdict;
  verified_at: number;
}

export type UnsignedReceipt = Omit<Receipt, "signature">;

/** The 22 field names in RFC 8785 order (UTF-16 code unit order, which for ASCII is byte order). */
export const RECEIPT_FIELDS = [
  "action", "audience", "block_reason", "config_hash", "expires_at", "issued_at", "issuer",
  "max_clock_skew", "nonce", "params_hash", "receipt", "request_hash", "response_hash",
  "rule_summary", "runtime_context_hash", "sequence", "signature", "timestamp", "tool",
  "trace_id", "verdict", "verified_at",
] as const satisfies readonly (keyof Receipt)[];

/**
 * The draft's SHOULD fields. A receipt may omit them: its signature then covers exactly the
 * fields present, and verification reads the defaults below.
 */
export const OPTIONAL_FIELDS = ["max_clock_skew", "response_hash", "runtime_context_hash", "sequence"] as const satisfies readonly (keyof Receipt)[];
/** CCS §6.8: the skew granted a receipt that does not state its own, seconds. */
export const DEFAULT_CLOCK_SKEW = 30;

export const ACTION_PREFIX = "ccs:tool-invoke:";
export const MAX_TOOL_BYTES = 256;
/**
 * Longest issuer or audience URI, UTF-8 bytes. One bound for receipts and anchors: an issuer
 * must fit a KV key (`anchor:<issuer>`, at most 512 bytes), and nothing an unauthenticated
 * caller sends is remembered at any length.
 */
export const MAX_URI_BYTES = 256;

const HEX32 = /^[0-9a-f]{32}$/;
const HEX128 = /^[0-9a-f]{128}$/;
/**
 * A nonce is lowercase hex of at least 32 digits (128 bits, DESIGN.md's wire profile). The profile
 * sets no upper bound; countersign takes at most 128 digits (512 bits), so a nonce row stays small.
 */
export const MIN_NONCE_HEX = 32;
export const MAX_NONCE_HEX = 128;
const NONCE = new RegExp(`^[0-9a-f]{${MIN_NONCE_HEX},${MAX_NONCE_HEX}}$`);
/**
 * CCS Figure 4's `rule_summary`: `rule_name=verdict` entries joined by `|`, where a verdict is
 * what a CCS Rule returns (the draft's RuleResult): `allow`, `deny` or `escalate`, lowercase as
 * the receipt's own `verdict`.
 * Linear: a name stops at the first `=`, so nothing backtracks.
 */
export const RULE_SUMMARY = /^[^=|]+=(?:allow|deny|escalate)(?:\|[^=|]+=(?:allow|deny|escalate))*$/;
const FIELD_SET = new Set<string>(RECEIPT_FIELDS);
const OPTIONAL_SET = new Set<string>(OPTIONAL_FIELDS);

/**
 * URIs already found valid, so the hot path parses each issuer and audience once. It holds at
 * most URI_MEMO_ENTRIES strings of at most MAX_URI_BYTES each (≤ 128 KiB of text), and is
 * cleared when full: a caller cycling through URIs costs a URL parse, never memory.
 */
const URI_MEMO_ENTRIES = 256;
const knownUris = new Set<string>();

/** Entries in the valid-URI memo; for tests that check no caller can grow it. */
export const uriMemoSize = (): number => knownUris.size;

/** An `https://` absolute URI of at most MAX_URI_BYTES, with a host and no whitespace or control character (C0, DEL or C1). */
/** What isHttpsUri takes, as a refusal's detail says it. */
export const HTTPS_URI_RULE = `an https:// URI naming a host (lowercase scheme; no whitespace, control character or "\\"), of at most ${MAX_URI_BYTES} UTF-8 bytes`;

export function isHttpsUri(value: unknown): value is string {
  if (typeof value !== "string") return false;
  if (knownUris.has(value)) return true;
  // A UTF-8 byte is at least a UTF-16 unit: the cheap length test first, the exact one after.
  if (value.length > MAX_URI_BYTES || utf8Length(value) > MAX_URI_BYTES) return false;
  if (!value.startsWith("https://") || /[\s\u0000-\u001f\u007f-\u009f]/.test(value)) return false;
  // RFC 3986: the authority follows "https://" at once, and "\" is no URI character. A URL parser
  // reads "https:///x" and "https://\x" as host x (WHATWG), but neither names a host as written.
  if (value.charAt(8) === "/" || value.includes("\\")) return false;
  try {
    if (new URL(value).host.length === 0) return false;
  } catch {
    return false;
  }
  if (knownUris.size >= URI_MEMO_ENTRIES) knownUris.clear();
  knownUris.add(value);
  return true;
}

/** The full params digest carried in `action`, or null when `action` is not of the profile's form. */
export function actionDigest(action: string, tool: string): string | null {
  const prefix = ACTION_PREFIX + tool + ":";
  if (!action.startsWith(prefix)) return null;
  const digest = action.slice(prefix.length);
  return HEX64.test(digest) ? digest : null;
}

type Check = (r: Record<string, unknown>) => string | null;

const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
/** A field's form; an absent optional field has none to check (its presence is checked apart). */
const form = (test: (v: unknown) => boolean, what: string) => (field: string): Check => (r) =>
  test(r[field]) || (r[field] === undefined && OPTIONAL_SET.has(field)) ? null : `${field} must be ${what}`;
const pattern = (re: RegExp, what: string) => form((v) => typeof v === "string" && re.test(v), what);
const time = form(isNumber, "a finite number of Unix seconds");
const hashOrEmpty = form((v) => v === "" || (typeof v === "string" && SHA256_REF.test(v)), '"sha256:" + 64 lowercase hex, or ""');

const FIELD_CHECKS: Check[] = [
  pattern(HEX16, "16 lowercase hex")("trace_id"),
  form((v) => v === "allow" || v === "deny" || v === "escalate", '"allow", "deny" or "escalate"')("verdict"),
  time("timestamp"), time("verified_at"), time("issued_at"), time("expires_at"),
  form((v) => typeof v === "string" && v.length > 0 && utf8Length(v) <= MAX_TOOL_BYTES, `a non-empty string of at most ${MAX_TOOL_BYTES} UTF-8 bytes`)("tool"),
  pattern(HEX16, "16 lowercase hex")("params_hash"),
  pattern(RULE_SUMMARY, '"name=verdict" entries joined by "|", each verdict allow, deny or escalate')("rule_summary"),
  pattern(HEX32, "32 lowercase hex")("receipt"),
  form((v) => typeof v === "string", "a string")("block_reason"),
  pattern(SHA256_REF, '"sha256:" + 64 lowercase hex')("request_hash"),
  pattern(SHA256_REF, '"sha256:" + 64 lowercase hex')("config_hash"),
  hashOrEmpty("response_hash"), hashOrEmpty("runtime_context_hash"),
  form((v) => typeof v === "string" && v.startsWith(ACTION_PREFIX), `"${ACTION_PREFIX}<tool>:<64 hex>"`)("action"),
  form(isHttpsUri, HTTPS_URI_RULE)("issuer"),
  form(isHttpsUri, HTTPS_URI_RULE)("audience"),
  pattern(NONCE, `${MIN_NONCE_HEX} to ${MAX_NONCE_HEX} lowercase hex digits`)("nonce"),
  form((v) => Number.isSafeInteger(v) && (v as number) >= 0, "an integer in 0..2^53-1")("sequence"),
  form((v) => isNumber(v) && v >= 0, "a number of seconds >= 0")("max_clock_skew"),
  pattern(HEX128, "128 lowercase hex")("signature"),
];

/** Cross-field rules of the profile, checked once every field has its form. */
function consistency(r: Receipt): string[] {
  const problems: string[] = [];
  const digest = actionDigest(r.action, r.tool);
  if (digest === null) problems.push(`action must be "${ACTION_PREFIX}${r.tool}:<64 lowercase hex>"`);
  else if (digest.slice(0, 16) !== r.params_hash) problems.push("params_hash is not the first 16 hex of the params digest in action");
  if (r.verdict === "allow" && r.block_reason !== "") problems.push("block_reason must be empty for an allow verdict");
  if (r.verdict !== "allow" && r.block_reason === "") problems.push(`block_reason must be non-empty for a ${r.verdict} verdict`);
  return problems;
}

export type ReceiptParse = { ok: true; receipt: Receipt } | { ok: false; failures: Failure[] };

/** Step 0 after strict parsing: the 18 required fields, no unknown one, each of its form, consistent. */
export function parseReceipt(value: unknown): ReceiptParse {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, failures: [failure("MALFORMED_RECEIPT", "receipt must be a JSON object")] };
  }
  const r = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(r)) if (!FIELD_SET.has(key)) problems.push(`unknown field ${JSON.stringify(key)}`);
  for (const field of RECEIPT_FIELDS) if (!Object.hasOwn(r, field) && !OPTIONAL_SET.has(field)) problems.push(`missing field ${field}`);
  if (problems.length === 0) {
    for (const check of FIELD_CHECKS) {
      const problem = check(r);
      if (problem) problems.push(problem);
    }
  }
  if (problems.length === 0) problems.push(...consistency(r as unknown as Receipt));
  if (problems.length > 0) return { ok: false, failures: problems.map((p) => failure("MALFORMED_RECEIPT", p)) };
  return { ok: true, receipt: r as unknown as Receipt };
}

export interface CanonicalReceipt {
  /** RFC 8785 bytes of every field present but `signature`: the Ed25519 message. */
  signedBytes: Uint8Array;
  /** RFC 8785 text of the whole receipt, signature included: the receipt_hash input. */
  fullText: string;
}

/** Fields whose validated form (hex, `sha256:` + hex, a number) can never need a JSON escape. */
const PLAIN_FIELDS = new Set<string>([
  "config_hash", "expires_at", "issued_at", "max_clock_skew", "nonce", "params_hash", "receipt", "request_hash",
  "response_hash", "runtime_context_hash", "sequence", "timestamp", "trace_id", "verdict", "verified_at",
]);
const MEMBER_PREFIX = Object.fromEntries(RECEIPT_FIELDS.map((f) => [f, `"${f}":`])) as Record<string, string>;

/**
 * Both canonical forms in one pass. Every field is a string or a finite number whose
 * `JSON.stringify` form is already the RFC 8785 form (hex and numbers need no escaping at all),
 * and the member order is fixed, so the signed text is the full text without `signature`. An
 * absent optional field is simply not a member (`action`, the first, is always present).
 */
export function canonicalReceipt(r: UnsignedReceipt & { signature?: string }): CanonicalReceipt {
  let before = "{";
  let after = "";
  let target = 0;
  for (const field of RECEIPT_FIELDS) {
    if (field === "signature") {
      target = 1;
      continue;
    }
    const value = r[field];
    if (value === undefined) continue;
    const member = MEMBER_PREFIX[field] + (PLAIN_FIELDS.has(field) && typeof value === "string" ? `"${value}"` : typeof value === "number" ? String(value) : JSON.stringify(value));
    if (target === 0) before += before.length === 1 ? member : "," + member;
    else after += "," + member;
  }
  const signed = before + after + "}";
  const fullText = r.signature === undefined ? signed : `${before},"signature":"${r.signature}"${after}}`;
  return { signedBytes: utf8(signed), fullText };
}
