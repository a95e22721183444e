/**
 * Evidence intake (CCS §3): the Command and countersign's optional fields, checked and
 * normalised before anything is hashed. Every string (object keys included) is put in NFC;
 * timestamps become UTC Unix seconds; binary params must be padded standard base64; the
 * Figure 2 limits are enforced on canonical (RFC 8785, UTF-8) bytes. Any problem is an
 * IntakeError with its Figure 3 code; nothing here ever produces a receipt.
 */
import type { IntakeErrorCode } from "../codes.js";
import { jcs } from "../digest.js";
import { HEX16, SHA256_REF, utf8Length } from "../encoding.js";
import { longCombiningRun, MAX_COMBINING_RUN } from "./marks.js";
import { PROTOTYPE_KEYS } from "../boundary.js";
import { isJsonObject } from "../strict-json.js";
import { isSecurityProfile, type SecurityProfile } from "./policy-floor.js";
import { missingCanonicalFields } from "./rules/sec-007.js";
import type { Command, HumanApproval } from "./rules/types.js";

export const INTAKE_VERSION = "1.3";

/** Figure 2, in bytes of canonical form (1 KB = 1024 bytes). */
export const INTAKE_LIMITS = {
  params: 64 * 1024,
  tool: 256,
  agent_id: 512,
  runtime_context: 16 * 1024,
  message: 128 * 1024,
} as const;

/** Keys of runtime_context that intake itself writes into the issued context; a caller may not supply them. */
export const RESERVED_CONTEXT_KEYS = ["delegation", "human_approval", "server_profile"] as const;

const COMMAND_FIELDS = ["intake_version", "agent_id", "tool", "params", "timestamp", "trace_id", "runtime_context", "delegation_chain"];
/** countersign's own optional fields, beside the Command's. */
const OWN_FIELDS = ["audience", "human_approval", "server_profile"];
const ALL_FIELDS = new Set([...COMMAND_FIELDS, ...OWN_FIELDS]);

/** Marks a params value as binary: `{"$base64": "<padded standard base64>"}` and nothing else. */
export const BINARY_MARKER = "$base64";

export class IntakeError extends Error {
  constructor(
    readonly code: IntakeErrorCode,
    readonly detail: string,
    /** The Command's trace_id, when it was readable. */
    readonly traceId: string | null = null,
  ) {
    super(detail);
    this.name = "IntakeError";
  }
}

export interface Intake {
  command: Command;
  /** The requested audience, when given; the route resolves the default. */
  audience: string | null;
  humanApproval: HumanApproval | null;
  serverProfile: SecurityProfile | null;
}

/**
 * NFC on every string and key; two keys that become one are refused rather than merged. A
 * prototype key (`__proto__`, `constructor`, `prototype`) is refused at any depth, as the strict
 * boundary refuses it: copied by assignment, `__proto__` would become the object's prototype and
 * its members would be hidden from the rules and from the canonical hash. Members are defined,
 * never assigned, so every key that is kept stays an own data member.
 */
export function normalizeNfc(value: unknown, fail: (detail: string) => never, depth = 0): unknown {
  if (typeof value === "string") return nfc(value, fail);
  if (Array.isArray(value)) return value.map((v) => normalizeNfc(v, fail, depth + 1));
  if (isJsonObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const key = nfc(k, fail);
      if (PROTOTYPE_KEYS.has(key)) fail(`the key ${JSON.stringify(key)} is refused in an intake message`);
      if (Object.hasOwn(out, key)) fail(`two keys are the same string in NFC: ${JSON.stringify(key)}`);
      Object.defineProperty(out, key, { value: normalizeNfc(v, fail, depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

/** NFC of one string or key; one with a run of combining marks past the stream-safe bound is refused, never normalised (see marks.ts). */
function nfc(text: string, fail: (detail: string) => never): string {
  if (longCombiningRun(text)) fail(`a string or key holds more than ${MAX_COMBINING_RUN} combining marks in a row (UAX #15's stream-safe bound); normalising it would cost time quadratic in the run`);
  return text.normalize("NFC");
}

/** RFC 3339 date-time; its `T` and `Z` may be written in either case (RFC 3339 §5.6, NOTE). */
const ISO_UTC = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
/** 9999-12-31T23:59:59Z: a later number is not a plausible Unix time in seconds (milliseconds, most likely). */
export const MAX_TIMESTAMP = 253402300799;

/**
 * A Command timestamp as UTC Unix seconds: a number is taken as Unix seconds; a string must be
 * RFC 3339 with `Z` or `+00:00` (any other offset, or none, is refused; `T` and `Z` in either case). Either form must land
 * between 0 (1970-01-01T00:00:00Z) and MAX_TIMESTAMP: a time before 1970 is refused as a string
 * exactly as it is as a number.
 */
export function utcSeconds(value: unknown, fail: (detail: string) => never): number {
  if (typeof value === "number") {
    if (!(value >= 0 && value <= MAX_TIMESTAMP)) fail(`timestamp must be Unix seconds between 0 and ${MAX_TIMESTAMP}`);
    return value;
  }
  if (typeof value !== "string") fail("timestamp must be a number of Unix seconds or an RFC 3339 UTC string");
  const m = ISO_UTC.exec(value as string);
  if (!m) fail("timestamp string must be RFC 3339, e.g. 2026-11-30T12:00:00Z");
  const [, y, mo, d, h, mi, s, frac, offset] = m!;
  if (offset !== "Z" && offset !== "z" && offset !== "+00:00") fail(`timestamp must be UTC (Z or +00:00), not ${offset}`);
  const ms = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== +y || back.getUTCMonth() !== +mo - 1 || back.getUTCDate() !== +d || +h > 23 || +mi > 59 || +s > 59) fail("timestamp is not a valid date and time");
  const seconds = ms / 1000;
  if (seconds < 0) fail("timestamp is before 1970-01-01T00:00:00Z; Unix seconds must not be negative");
  // Decimal text, then one conversion: "1796000000" + ".5" is exactly 1796000000.5 (seconds is a
  // non-negative integer here, so appending the fraction adds it).
  const result = frac ? Number(String(seconds) + frac) : seconds;
  if (result > MAX_TIMESTAMP) fail(`timestamp must be Unix seconds between 0 and ${MAX_TIMESTAMP}`);
  return result;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Padded standard base64 in its canonical form (unused bits zero). */
export function isCanonicalBase64(text: string): boolean {
  if (!BASE64.test(text)) return false;
  try {
    return btoa(atob(text)) === text;
  } catch {
    return false;
  }
}

/** Every binary marker inside params must carry canonical padded standard base64. */
function checkBinary(value: unknown, fail: (detail: string) => never, depth = 0): void {
  if (Array.isArray(value)) value.forEach((v) => checkBinary(v, fail, depth + 1));
  else if (isJsonObject(value)) {
    if (Object.hasOwn(value, BINARY_MARKER)) {
      const keys = Object.keys(value);
      const data = value[BINARY_MARKER];
      if (keys.length !== 1) fail(`a binary value is {"${BINARY_MARKER}": …} with no other member`);
      if (typeof data !== "string" || !isCanonicalBase64(data)) fail("binary params must be standard base64 with padding");
      return;
    }
    for (const v of Object.values(value)) checkBinary(v, fail, depth + 1);
  }
}

const canonicalBytes = (value: unknown): number => utf8Length(jcs(value));

/** Checks, normalises and limits one intake message (already strictly parsed). */
export function parseIntake(body: unknown): Intake {
  let traceId: string | null = null;
  const error = (code: IntakeErrorCode) => (detail: string): never => {
    throw new IntakeError(code, detail, traceId);
  };
  const malformed = error("INTAKE_MALFORMED");
  const overflow = error("INTAKE_OVERFLOW");
  if (!isJsonObject(body)) return malformed("the intake message must be a JSON object");
  if (typeof body.trace_id === "string" && HEX16.test(body.trace_id)) traceId = body.trace_id;

  if (Object.hasOwn(body, "intake_version")) {
    if (typeof body.intake_version !== "string") malformed("intake_version must be a string");
    if (body.intake_version !== INTAKE_VERSION) error("INTAKE_VERSION_UNSUPPORTED")(`intake_version ${JSON.stringify(body.intake_version)} is not supported; this verifier accepts "${INTAKE_VERSION}"`);
  }
  const missing = missingCanonicalFields(body);
  if (missing.length > 0) error("INTAKE_MISSING_FIELD")(`missing required field${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}`);
  for (const key of Object.keys(body)) if (!ALL_FIELDS.has(key)) malformed(`unknown field ${JSON.stringify(key.slice(0, 64))}`);

  const n = normalizeNfc(body, malformed) as Record<string, unknown>;
  if (typeof n.agent_id !== "string" || n.agent_id === "") malformed("agent_id must be a non-empty string");
  if (typeof n.tool !== "string" || n.tool === "") malformed("tool must be a non-empty string");
  if (typeof n.trace_id !== "string" || !HEX16.test(n.trace_id)) malformed("trace_id must be 16 lowercase hex");
  if (!isJsonObject(n.params)) malformed("params must be a JSON object");
  if (n.runtime_context !== undefined && !isJsonObject(n.runtime_context)) malformed("runtime_context must be a JSON object");
  if (n.delegation_chain !== undefined && !isJsonObject(n.delegation_chain)) malformed("delegation_chain must be the parent receipt or its envelope, a JSON object");
  const timestamp = utcSeconds(n.timestamp, malformed);
  checkBinary(n.params, malformed);
  const context = n.runtime_context as Record<string, unknown> | undefined;
  for (const key of RESERVED_CONTEXT_KEYS) if (context && Object.hasOwn(context, key)) malformed(`runtime_context.${key} is written by intake and may not be supplied`);

  if (utf8Length(n.tool as string) > INTAKE_LIMITS.tool) overflow(`tool exceeds ${INTAKE_LIMITS.tool} bytes`);
  if (utf8Length(n.agent_id as string) > INTAKE_LIMITS.agent_id) overflow(`agent_id exceeds ${INTAKE_LIMITS.agent_id} bytes`);
  if (canonicalBytes(n.params) > INTAKE_LIMITS.params) overflow(`params exceed ${INTAKE_LIMITS.params} canonical bytes`);
  if (context && canonicalBytes(context) > INTAKE_LIMITS.runtime_context) overflow(`runtime_context exceeds ${INTAKE_LIMITS.runtime_context} canonical bytes`);
  if (canonicalBytes(n) > INTAKE_LIMITS.message) overflow(`the intake message exceeds ${INTAKE_LIMITS.message} canonical bytes`);

  if (n.audience !== undefined && typeof n.audience !== "string") malformed("audience must be a string");
  if (n.server_profile !== undefined && !isSecurityProfile(n.server_profile)) malformed("server_profile must be one of none, tls, authenticated, mutual-tls, attested");
  let humanApproval: HumanApproval | null = null;
  if (n.human_approval !== undefined) {
    const a = n.human_approval;
    const ok = isJsonObject(a) && Object.keys(a).every((k) => k === "approver" || k === "request_hash") && typeof a.approver === "string" && a.approver !== "" && utf8Length(a.approver) <= 512 && typeof a.request_hash === "string" && SHA256_REF.test(a.request_hash);
    if (!ok) malformed('human_approval must be {approver: a non-empty string of at most 512 UTF-8 bytes, request_hash: "sha256:" + 64 hex}');
    humanApproval = { approver: (a as HumanApproval).approver, request_hash: (a as HumanApproval).request_hash };
  }
  const command: Command = {
    intake_version: INTAKE_VERSION,
    agent_id: n.agent_id as string,
    tool: n.tool as string,
    params: n.params as Record<string, unknown>,
    timestamp,
    trace_id: n.trace_id as string,
    ...(context ? { runtime_context: context } : {}),
    ...(n.delegation_chain ? { delegation_chain: n.delegation_chain as Record<string, unknown> } : {}),
  };
  return { command, audience: (n.audience as string | undefined) ?? null, humanApproval, serverProfile: (n.server_profile as SecurityProfile | undefined) ?? null };
}
