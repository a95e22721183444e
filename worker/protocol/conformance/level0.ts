/**
 * CCS §10 Level 0 receipts: the legacy 7-field receipt (trace_id, verdict, timestamp, tool,
 * params_hash, rule_summary, receipt) whose `receipt` is HMAC-SHA256 over the §4.2 signing
 * payload, truncated to 32 hex. An HMAC proves only that someone holding the shared secret made
 * it, so a Level 0 receipt is verifiable inside one trust domain only: its issuer is pinned with
 * a shared secret, it carries no nonce (nothing guards against its replay, and every answer says
 * so) and it is never accepted in an envelope, a chain or across organisations.
 *
 * The same HMAC verifies field 7 of a v1.3 receipt (countersign's own, under LEGACY_HMAC_KEY):
 * §4.2 extends the payload with every extended field present, legacy-hmac.ts fixes that reading.
 *
 * The base payload, countersign's reading of the draft's "each field interpolated using its
 * string representation": trace_id|verdict|timestamp|tool|params_hash|rule_summary, the timestamp
 * in Python's float form (1796000000.0), the whole UTF-8 encoded. Pure: time and the secret are
 * parameters.
 */
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { failure, type Failure } from "../codes.js";
import { jcs, prefixedDigest, sha256Hex } from "../digest.js";
import { fromHex, HEX16, toHex, utf8, utf8Length } from "../encoding.js";
import { isJsonObject } from "../strict-json.js";
import { MAX_TOOL_BYTES, parseReceipt, RULE_SUMMARY, type Receipt, type Verdict } from "../receipt.js";
import { checkAudience } from "../checks/audience.js";
import { checkBinding, type PresentedRequest } from "../checks/binding.js";
import { checkFreshness, seconds, type FreshnessPolicy } from "../checks/freshness.js";
import type { Enforcement } from "../checks/outcome.js";
import { legacyPayload, pythonFloat } from "../issuing/legacy-hmac.js";
import { gateDecision, type Decision, type Mode } from "../verify.js";

/** The seven fields of a Level 0 receipt, in the order the payload takes them (`receipt` last, never in it). */
export const LEVEL0_FIELDS = ["trace_id", "verdict", "timestamp", "tool", "params_hash", "rule_summary", "receipt"] as const;
/** The draft's Conditional field: a Level 0 receipt may carry it; the HMAC does not cover it. */
const LEVEL0_OPTIONAL = ["block_reason"];

export interface Level0Receipt {
  trace_id: string;
  verdict: Verdict;
  timestamp: number;
  tool: string;
  params_hash: string;
  rule_summary: string;
  receipt: string;
  block_reason?: string;
}

/** The name of a Worker secret a shared-secret anchor refers to; the secret itself is never stored. */
export const SECRET_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

const HEX32 = /^[0-9a-f]{32}$/;
const VERDICTS = new Set(["allow", "deny", "escalate"]);

/** Fields a v1.3 receipt has and a Level 0 receipt lacks: a v1.3 receipt stripped of its signature still has them. */
const V13_ONLY = ["signature", "issuer", "audience", "nonce", "issued_at", "expires_at"];

/**
 * Whether a value has the shape of a Level 0 receipt: a string `receipt` and none of the fields
 * only a v1.3 receipt has. What routes and chains use to refuse one by name rather than as a
 * malformed (or stripped) v1.3 receipt.
 */
export function isLevel0Shape(value: unknown): boolean {
  return isJsonObject(value) && typeof value.receipt === "string" && !V13_ONLY.some((k) => Object.hasOwn(value, k));
}

export type Level0Parse = { ok: true; receipt: Level0Receipt } | { ok: false; failures: Failure[] };

export function parseLevel0(value: unknown): Level0Parse {
  const bad = (detail: string): Level0Parse => ({ ok: false, failures: [failure("MALFORMED_RECEIPT", `Level 0 receipt: ${detail}`)] });
  if (!isJsonObject(value)) return bad("must be an object");
  for (const key of Object.keys(value)) if (!(LEVEL0_FIELDS as readonly string[]).includes(key) && !LEVEL0_OPTIONAL.includes(key)) return bad(`unknown field ${JSON.stringify(key)}`);
  for (const key of LEVEL0_FIELDS) if (!Object.hasOwn(value, key)) return bad(`missing field ${key}`);
  const v = value as Record<string, unknown>;
  if (typeof v.trace_id !== "string" || !HEX16.test(v.trace_id)) return bad("trace_id must be 16 lowercase hex");
  if (typeof v.verdict !== "string" || !VERDICTS.has(v.verdict)) return bad('verdict must be "allow", "deny" or "escalate"');
  if (typeof v.timestamp !== "number" || !Number.isFinite(v.timestamp)) return bad("timestamp must be a finite number of Unix seconds");
  if (typeof v.tool !== "string" || v.tool === "" || utf8Length(v.tool) > MAX_TOOL_BYTES) return bad(`tool must be a non-empty string of at most ${MAX_TOOL_BYTES} UTF-8 bytes`);
  // The payload joins fields with "|", and field 7 of a v1.3 receipt is the same HMAC over a longer
  // join: a "|" where the 7-field form takes free text would let a v1.3 receipt's tail be smuggled
  // in as one field, and its field 7 pass as a Level 0 receipt without signature, nonce or audience.
  if (v.tool.includes("|")) return bad('tool must not contain "|" (the payload separator)');
  if (typeof v.params_hash !== "string" || !HEX16.test(v.params_hash)) return bad("params_hash must be 16 lowercase hex");
  if (typeof v.rule_summary !== "string" || !RULE_SUMMARY.test(v.rule_summary)) return bad('rule_summary must be "name=verdict" entries joined by "|", each verdict allow, deny or escalate');
  if (typeof v.receipt !== "string" || !HEX32.test(v.receipt)) return bad("receipt must be 32 lowercase hex");
  if (Object.hasOwn(v, "block_reason")) {
    if (typeof v.block_reason !== "string") return bad("block_reason must be a string");
    if ((v.verdict === "allow") !== (v.block_reason === "")) return bad("block_reason must be empty for allow and non-empty for deny or escalate");
  }
  return { ok: true, receipt: v as unknown as Level0Receipt };
}

/** The base signing payload of a Level 0 receipt, as text. */
export function level0Payload(r: Omit<Level0Receipt, "receipt" | "block_reason">): string {
  return [r.trace_id, r.verdict, pythonFloat(r.timestamp), r.tool, r.params_hash, r.rule_summary].join("|");
}

/** HMAC-SHA256 of the payload under `secret`, truncated to 32 lowercase hex: the value of field 7. */
export function legacyMac(payload: string, secret: Uint8Array): string {
  return toHex(hmac(sha256, secret, utf8(payload))).slice(0, 32);
}

/** Compares two equal-length hex strings without stopping at the first difference. */
function sameHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** A shared secret as a Worker secret holds it: at least 32 bytes as lowercase hex (LEGACY_HMAC_KEY's form). */
export function decodeSharedSecret(text: string | undefined): Uint8Array | null {
  return text !== undefined && /^([0-9a-f]{2}){32,}$/.test(text) ? fromHex(text) : null;
}

export interface Level0Options {
  /** The issuer the call names (a 7-field receipt names none); a v1.3 receipt's own must equal it. */
  issuer: string;
  /** The issuer's shared secret, or null when the issuer is not pinned with one. */
  secret: Uint8Array | null;
  /** The issuer's organisation is not this deployment's: the HMAC would cross a trust domain. */
  crossOrg: boolean;
  audience: string;
  mode: Mode;
  now: number;
  policy: FreshnessPolicy;
  request?: PresentedRequest;
  response?: unknown;
  runtimeContext?: unknown;
}

/** A Level 0 decision: the receipt route's decision with `level: 0`. */
export type Level0Decision = Decision & { level: 0 };

const ENFORCEMENT: Record<Verdict, Enforcement> = {
  allow: { action: "proceed_pending_reconciliation", verdict: "allow", outcome_status: "dispatched" },
  deny: { action: "block", verdict: "deny", outcome_status: "confirmed" },
  escalate: { action: "defer", verdict: "escalate", outcome_status: "dispatched" },
};

/**
 * Judges a Level 0 receipt (7 fields) or the field 7 of a v1.3 receipt by its HMAC alone. Checks,
 * each with its code: form (MALFORMED_RECEIPT); freshness (FRESHNESS_EXPIRED: a 7-field receipt's
 * timestamp within the policy's lifetime and skew of now, a v1.3 receipt's own window); audience
 * (a v1.3 receipt's); the issuer pinned with a shared secret and of this organisation
 * (UNTRUSTED_ISSUER, LEVEL0_NOT_ACCEPTED); the HMAC (SIGNATURE_INVALID); the presented request
 * (BINDING_MISMATCH). Every answer on a 7-field receipt carries the REPLAY_UNGUARDED warning; no nonce is consumed.
 * The receipt route judges a v1.3 receipt whose field 7 holds again at level 1 (signature,
 * revocation, nonce), which needs the stores this pure function does not have.
 */
export async function verifyLevel0(value: unknown, opts: Level0Options): Promise<Level0Decision> {
  const v13 = isJsonObject(value) && Object.hasOwn(value, "signature");
  const parsed = v13 ? parseReceipt(value) : parseLevel0(value);
  const failures: Failure[] = [];
  let verdict: Verdict | null = null;
  if (!parsed.ok) failures.push(...parsed.failures);
  else if (v13) {
    const r = parsed.receipt as Receipt;
    verdict = r.verdict;
    failures.push(...checkFreshness(r, opts.now, opts.policy), ...checkAudience(r, opts.audience));
    if (r.issuer !== opts.issuer) failures.push(failure("UNTRUSTED_ISSUER", `the receipt's issuer ${r.issuer} is not the issuer the call names`));
    failures.push(...macFailures(legacyPayload(r), r.receipt, opts));
    failures.push(...(await checkBinding(r, opts)));
  } else {
    const r = parsed.receipt as Level0Receipt;
    verdict = r.verdict;
    const skew = opts.policy.skewCap;
    if (r.timestamp > opts.now + skew) failures.push(failure("FRESHNESS_EXPIRED", `timestamp is ${seconds(r.timestamp - opts.now)}s in the future (skew ${skew}s)`));
    else if (r.timestamp < opts.now - opts.policy.maxLifetime - skew) failures.push(failure("FRESHNESS_EXPIRED", `timestamp is older than the ${opts.policy.maxLifetime}s lifetime and ${skew}s skew`));
    failures.push(...macFailures(level0Payload(r), r.receipt, opts));
    if (opts.request) failures.push(...(await bindLevel0(r, opts.request)));
  }
  // A v1.3 receipt carries its nonce: refused here, it was not presented unguarded; held, it goes on to level 1.
  if (!v13) failures.push(failure("REPLAY_UNGUARDED", "a Level 0 receipt carries no nonce: nothing stops it being presented again"));
  const valid = !failures.some((f) => f.severity === "CRITICAL");
  const enforcement: Enforcement = valid && verdict ? ENFORCEMENT[verdict] : { action: "block", verdict, outcome_status: verdict === null ? null : verdict === "deny" ? "confirmed" : "dispatched" };
  return {
    valid,
    decision: gateDecision(opts.mode, valid, enforcement.action),
    failures,
    enforcement,
    receipt_hash: isJsonObject(value) ? await prefixedDigest(jcs(value)) : null,
    nonce_consumed: false,
    mode: opts.mode,
    checked_at: opts.now,
    issuer: opts.issuer,
    kid: null,
    level: 0,
  };
}

function macFailures(payload: string, presented: string, opts: Level0Options): Failure[] {
  // The organisation first: an issuer pinned for another organisation is refused by name whether or
  // not a shared secret is pinned for it (a pin refuses one for another organisation, so it has none).
  if (opts.crossOrg) return [failure("LEVEL0_NOT_ACCEPTED", `${opts.issuer} belongs to another organisation: an HMAC shared across organisations proves nothing about which one made it`)];
  if (opts.secret === null) return [failure("UNTRUSTED_ISSUER", `${opts.issuer} is not pinned with a shared secret: a Level 0 receipt cannot be verified for it`)];
  return sameHex(legacyMac(payload, opts.secret), presented) ? [] : [failure("SIGNATURE_INVALID", "the receipt field is not the HMAC-SHA256 of the signing payload under the pinned shared secret")];
}

/** What a 7-field receipt binds of the presented Command: its trace_id, tool and params. */
async function bindLevel0(r: Level0Receipt, q: PresentedRequest): Promise<Failure[]> {
  const differs: string[] = [];
  if (q.trace_id !== r.trace_id) differs.push("trace_id");
  if (q.tool !== r.tool) differs.push("tool");
  if ((await sha256Hex(jcs(q.params))).slice(0, 16) !== r.params_hash) differs.push("params_hash");
  return differs.length ? [failure("BINDING_MISMATCH", `the presented request differs from the receipt in ${differs.join(", ")}`)] : [];
}

/** The refusal of a Level 0 receipt where only v1.3 evidence is taken. */
export const level0Refused = (where: string): Failure =>
  failure("LEVEL0_NOT_ACCEPTED", `a Level 0 receipt is verifiable only inside one trust domain, on the receipt route with level: 0; ${where} takes v1.3 receipts only`);
