/**
 * The HTTP contract's schemas (zod, a standard-schema validator). Call bodies are validated with
 * these after the strict JSON parse, and `/openapi.json` is generated from the very same objects,
 * so the document cannot drift from what the routes accept. The 22-field receipt keeps its
 * hand-written check on the hot path (`worker/protocol/receipt.ts`); `Receipt` here documents it,
 * and a test holds the two to the same field set.
 */
import { z } from "zod";
import anchorPinSchema from "../../kv-schemas/anchor-pin.schema.json" with { type: "json" };
import anchorKeySchema from "../../kv-schemas/anchor-key.schema.json" with { type: "json" };
import { CALL_ERROR_CODES, FAILURE_CODES, INTAKE_ERROR_CODES } from "../protocol/codes.js";
import { isHttpsUri, MAX_NONCE_HEX, MAX_TOOL_BYTES, MAX_URI_BYTES, MIN_NONCE_HEX, RECEIPT_FIELDS, RULE_SUMMARY } from "../protocol/receipt.js";
import { EFFECT_DISPOSITIONS, JOURNAL_STATES } from "../protocol/journal/lifecycle.js";
import { MAX_IDEMPOTENCY_KEY, MAX_LEASE_SECONDS } from "../protocol/journal/core.js";
import { isJsonObject } from "../protocol/strict-json.js";
import { utf8Length } from "../protocol/encoding.js";
import { CHAIN_ID, SEAL_TYPE } from "../protocol/chain-seal.js";
import { SEQUENCE_RESETS_PAGE } from "../protocol/ledger.js";
import { MAX_CHAIN_ENTRIES, MAX_CHAIN_HOPS } from "../protocol/chain.js";
import { RELYING_PARTY_NAME, RELYING_PARTY_NAME_RULE, RELYING_PARTY_TOKEN } from "../protocol/relying-parties.js";

const hex = (n: number) => z.string().regex(new RegExp(`^[0-9a-f]{${n}}$`));
const sha256Ref = z.string().regex(/^sha256:[0-9a-f]{64}$/);
/**
 * A JSON object handed on as parsed, for the strict boundary behind the schema (the journal's, a registration's) to judge. `z.record` would
 * copy it and silently leave out an own `__proto__` member (zod never assigns one), so a prototype
 * key the boundary refuses at any depth would be accepted, and dropped, at the top level.
 */
const jsonObject = z.unknown().refine(isJsonObject, "Invalid input: expected an object").meta({ type: "object" });
/**
 * `.max` counts UTF-16 code units (what maxLength documents); the refinement holds the bound the
 * description states, in UTF-8 bytes (`exclude` took 125 × "é", 258 bytes, and echoed it).
 */
export const Uri = z
  .string()
  .regex(/^https:\/\/\S+$/)
  .max(MAX_URI_BYTES)
  .refine((s) => utf8Length(s) <= MAX_URI_BYTES, `must be at most ${MAX_URI_BYTES} UTF-8 bytes`)
  .meta({ description: `an https:// URI of at most ${MAX_URI_BYTES} UTF-8 bytes (maxLength counts characters, a weaker bound)` });
const seconds = z.number().meta({ description: "Unix seconds" });
const kid = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/);

const VerifierClass = z.enum(["A", "B", "C"]).meta({ id: "VerifierClass", description: "CCS §9: A own organisation's, audited; B third party, independently audited; C claims conformance, unaudited" });
export const FailureCode = z.enum(FAILURE_CODES).meta({ id: "FailureCode", description: "what a decision found; clients branch on these codes only" });
export const CallErrorCode = z.enum(CALL_ERROR_CODES).meta({ id: "CallErrorCode", description: "why a call could not be judged" });

export const Receipt = z
  .object({
    action: z.string().meta({ description: "ccs:tool-invoke:<tool>:<64 hex full params digest>" }),
    audience: Uri,
    block_reason: z.string(),
    config_hash: sha256Ref,
    expires_at: seconds,
    issued_at: seconds,
    issuer: Uri,
    max_clock_skew: z.number().min(0).optional(),
    nonce: z
      .string()
      .regex(new RegExp(`^[0-9a-f]{${MIN_NONCE_HEX},${MAX_NONCE_HEX}}$`))
      .meta({ description: `${MIN_NONCE_HEX} to ${MAX_NONCE_HEX} lowercase hex digits (at least 128 bits), never reused` }),
    params_hash: hex(16),
    receipt: hex(32).meta({ description: "legacy HMAC-SHA256 field, truncated; covered by the signature, never trusted alone" }),
    request_hash: sha256Ref,
    response_hash: z.union([sha256Ref, z.literal("")]).optional(),
    rule_summary: z.string().regex(RULE_SUMMARY).meta({ description: "name=verdict entries joined by |, each verdict allow, deny or escalate" }),
    runtime_context_hash: z.union([sha256Ref, z.literal("")]).optional(),
    sequence: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    signature: hex(128).meta({ description: "Ed25519 over the RFC 8785 bytes of every other field present" }),
    timestamp: seconds,
    tool: z.string().min(1).max(MAX_TOOL_BYTES).meta({ description: `at most ${MAX_TOOL_BYTES} UTF-8 bytes (maxLength counts characters, a weaker bound)` }),
    trace_id: hex(16),
    verdict: z.enum(["allow", "deny", "escalate"]),
    verified_at: seconds,
  })
  .strict()
  .meta({ id: "Receipt", description: "A CCS v1.3 receipt: 22 fields, the four SHOULD fields optional" });

/** The receipt as a call carries it: checked by hand (MALFORMED_RECEIPT), documented as Receipt. */
export const ReceiptSlot = z.unknown().meta({ id: "ReceiptSlot" });

export const Level0Receipt = z
  .object({
    trace_id: hex(16),
    verdict: z.enum(["allow", "deny", "escalate"]),
    timestamp: z.number(),
    tool: z.string(),
    params_hash: hex(16),
    rule_summary: z.string().regex(RULE_SUMMARY),
    receipt: hex(32).meta({ description: "HMAC-SHA256 over trace_id|verdict|timestamp|tool|params_hash|rule_summary (timestamp in Python float form), truncated to 32 hex" }),
    block_reason: z.string().optional().meta({ description: "the draft's Conditional field; not covered by the HMAC" }),
  })
  .strict()
  .meta({ id: "Level0Receipt", description: "CCS §10 Level 0 legacy receipt: verifiable only with the issuer's shared secret, on a level: 0 call of the receipt route" });

export const PresentedRequest = z
  .object({ agent_id: z.string(), tool: z.string(), params: z.unknown(), timestamp: z.number(), trace_id: z.string() })
  .strict()
  .meta({ id: "Command", description: "the Command the receipt was issued for" });

const mode = z.enum(["enforce", "audit"]).optional();

export const VerifyCall = z
  .object({
    receipt: ReceiptSlot,
    audience: z.string(),
    request: PresentedRequest.optional(),
    response: z.unknown().optional(),
    runtime_context: z.unknown().optional(),
    mode,
    at: z.number().optional().meta({ description: "audit mode only: judge freshness at this instant" }),
    outcome_status: z.enum(["indeterminate", "unknown"]).optional(),
    level: z.literal(0).optional().meta({ description: "CCS §10 Level 0: judge the receipt by its HMAC under the issuer's pinned shared secret (a 7-field receipt, or field 7 of a v1.3 one); no replay guarantee" }),
    issuer: Uri.optional().meta({ description: "with level 0: the issuer whose shared secret verifies the receipt (a 7-field receipt names none)" }),
  })
  .strict()
  .meta({ id: "VerifyCall" });

export const EnvelopeSlot = z.unknown().meta({ id: "EnvelopeSlot" });

export const Envelope = z
  .object({
    envelope_version: z.literal("1.3"),
    original_receipt: Receipt,
    parent_trace_id: hex(16),
    child_trace_id: hex(16),
    delegation_reason: z.string(),
    hop_count: z.number().int().min(0),
    previous_receipt_hash: sha256Ref.nullable().optional().meta({ description: "the original receipt's receipt_hash; left out or null at hop 0 only" }),
    sender_org_id: Uri.optional(),
    receiver_org_id: Uri.optional(),
    trust_anchor_reference: hex(64).optional(),
    self_contained: z.literal(true).optional(),
    issuer_public_key: z.string().optional().meta({ description: "base64url of the raw 32-byte key" }),
  })
  .strict()
  .meta({ id: "Envelope" });

export const EnvelopeCall = z
  .object({ envelope: EnvelopeSlot, audience: z.string(), mode, at: z.number().optional() })
  .strict()
  .meta({ id: "EnvelopeCall" });

export const Failure = z
  .object({ code: z.union([FailureCode, CallErrorCode]), severity: z.enum(["CRITICAL", "WARNING"]), step: z.number().int().nullable(), detail: z.string() })
  .meta({ id: "Failure" });

export const ErrorBody = z.object({ code: CallErrorCode.or(FailureCode), detail: z.string() }).meta({ id: "Error" });
export const ErrorAnswer = z.object({ error: ErrorBody }).meta({ id: "ErrorAnswer", description: "every 4xx/5xx: {error: {code, detail}}" });

const EnforcementAction = z.enum(["proceed", "proceed_pending_reconciliation", "conservative", "block", "defer"]);
const ReceiptVerdict = z.enum(["allow", "deny", "escalate"]);

export const Decision = z
  .object({
    valid: z.boolean().meta({ description: "the evidence verdict alone" }),
    decision: z.enum(["accept", "reject", "defer", "audit"]).meta({ description: "the one field a gate acts on" }),
    failures: z.array(Failure),
    enforcement: z.object({
      action: EnforcementAction,
      verdict: ReceiptVerdict.nullable(),
      outcome_status: z.enum(["confirmed", "dispatched", "indeterminate", "unknown"]).nullable(),
    }),
    receipt_hash: sha256Ref.nullable(),
    nonce_consumed: z.boolean(),
    mode: z.enum(["enforce", "audit"]),
    checked_at: z.number(),
    issuer: z.string().nullable(),
    kid: z.string().nullable(),
    idempotent_replay: z.literal(true).optional(),
    verifier_class: VerifierClass.nullable().optional().meta({ description: "CCS §9 class of the issuer's verifier as its anchor declares it; null when the issuer is not pinned" }),
    level: z.union([z.literal(0), z.literal(1)]).optional().meta({ description: "receipt route: 0 for a receipt judged by its HMAC (level: 0 calls), 1 for a v1.3 receipt judged by its Ed25519 signature" }),
    envelope: z.object({ hop_count: z.number(), child_trace_id: z.string(), cross_org: z.boolean() }).optional(),
  })
  .meta({ id: "Decision" });
/** A decision route's 4xx/5xx: the rejection's decision fields, and always the error. */
export const DecisionError = Decision.extend({ error: ErrorBody })
  .meta({ id: "DecisionError", description: "a decision route's 4xx/5xx: {error: {code, detail}} plus the decision fields (valid: false, decision reject, or audit in audit mode)" });

const ChainFailure = Failure.extend({ hop: z.number().int() }).meta({ id: "ChainFailure" });

export const ChainSlot = z.unknown().meta({ id: "ChainSlot" });
export const SealSlot = z.unknown().meta({ id: "SealSlot" });
const chainId = z.string().regex(CHAIN_ID);

export const Seal = z
  .object({
    type: z.literal(SEAL_TYPE),
    chain_id: chainId,
    total_hops: z.number().int().min(1),
    summary_hash: sha256Ref,
    tail: sha256Ref.meta({ description: "the receipt hash of the chain's last entry" }),
    sealed_at: seconds,
    issuer: Uri,
    kid,
    signature: hex(128),
  })
  .meta({ id: "ChainSeal" });

const KeptEntry = z.object({ hop_count: z.number().int().min(0), previous_receipt_hash: sha256Ref.nullable().optional(), receipt: Receipt, runtime_context: z.unknown().optional() }).strict();
const PrunedEntry = z.object({ hop_count: z.number().int().min(0), receipt_hash: sha256Ref, pruned: z.literal(true) }).strict();
export const ChainEntry = z.union([KeptEntry, PrunedEntry]).meta({ id: "ChainEntry" });
export const Chain = z
  .object({ chain_id: chainId, entries: z.array(ChainEntry).min(1).max(MAX_CHAIN_ENTRIES).meta({ description: `at most ${MAX_CHAIN_ENTRIES} entries are read (a chain holds ${MAX_CHAIN_HOPS} hops; 17 to ${MAX_CHAIN_ENTRIES} are judged HOP_LIMIT_EXCEEDED)` }), summary_hash: sha256Ref, total_hops: z.number().int().min(0) })
  .strict()
  .meta({ id: "Chain" });

export const ChainVerifyCall = z
  .object({ chain: ChainSlot, seal: SealSlot.optional(), spot: z.number().int().min(0).optional(), check_freshness: z.boolean().optional(), at: z.number().optional() })
  .strict()
  .meta({ id: "ChainVerifyCall" });

export const ChainVerdict = z
  .object({
    chain_id: z.string(),
    chain_valid: z.boolean(),
    broken_at_hop: z.number().int().nullable(),
    failures: z.array(ChainFailure),
    summary_hash: sha256Ref,
    total_hops: z.number().int(),
    mode: z.enum(["full", "spot"]),
    verified_hops: z.array(z.number().int()),
    links: z
      .array(z.object({ hop: z.number().int(), status: z.enum(["none", "signed", "unsigned"]), verdict: ReceiptVerdict.nullable(), action: EnforcementAction }))
      .meta({ description: "each verified hop (never a pruned one, which has no receipt to verify): its link, and its receipt's verdict and enforcement action (a valid chain may hold a deny)" }),
    spot_valid: z.boolean().nullable().meta({ description: "spot mode: whether the spot hop itself passed; null in full mode. chain_valid in spot mode also needs a valid seal" }),
    seal: z.object({ issuer: z.string(), kid: z.string(), sealed_at: z.number(), valid: z.boolean() }).nullable(),
  })
  .meta({ id: "ChainVerdict" });

export const HopCall = z.object({ entry: z.unknown().meta({ description: "a kept ChainEntry" }) }).strict().meta({ id: "HopCall" });

const ChainStateFields = {
  chain_id: z.string(),
  owner: z.string(),
  total_hops: z.number().int(),
  tail: sha256Ref.nullable(),
  summary_hash: sha256Ref,
  receipt_hashes: z.array(sha256Ref),
  chain_valid: z.boolean().meta({ description: "false once a key that signed one of its hops is revoked (CCS §14)" }),
  broken_at_hop: z.number().int().nullable(),
  revoked: z.object({ hop: z.number().int(), fingerprint: hex(64), revoked_at: z.number() }).nullable().meta({ description: "the revoked key and the first hop it signed" }),
};
export const HopAppended = z
  .object({ appended: z.literal(true), hop_count: z.number().int(), receipt_hash: sha256Ref, nonce_consumed: z.boolean(), ...ChainStateFields, idempotent_replay: z.literal(true).optional().meta({ description: "an Idempotency-Key retry of the call that consumed the hop's nonce: the hop is appended once, the chain answered as it stands" }) })
  .meta({ id: "HopAppended" });
export const HopRefused = z
  .object({ error: ErrorBody, failures: z.array(Failure).optional(), chain: z.object(ChainStateFields).optional(), nonce_consumed: z.boolean().optional() })
  .meta({ id: "HopRefused" });
export const LiveChain = z.object({ ...ChainStateFields, seal: Seal.nullable().meta({ description: "null when the chain is broken by a revoked key: the seal is withdrawn" }) }).meta({ id: "LiveChain" });

export const PublishedKey = z.object({ kid, alg: z.literal("Ed25519"), public_key: z.string().regex(/^[A-Za-z0-9_-]{43}$/), fingerprint: hex(64) }).meta({ id: "PublishedKey" });
export const IssuerDocument = z
  .object({ issuer: Uri, org_id: Uri.nullable(), chain_sealer: z.literal(true).meta({ description: "pinned as published, this deployment's chain seals are trusted" }), keys: z.array(PublishedKey).min(1) })
  .meta({ id: "IssuerDocument" });

/** `{a, b?, …}` of a JSON Schema's members, `?` on the optional ones: written from the schema, so the document cannot leave one out. */
const membersOf = (schema: { properties: Record<string, unknown>; required: string[] }, inner: Record<string, string> = {}) =>
  `{${Object.keys(schema.properties)
    .sort((a, b) => Number(a in inner) - Number(b in inner))
    .map((name) => `${name}${schema.required.includes(name) ? "" : "?"}${inner[name] ? `: ${inner[name]}` : ""}`)
    .join(", ")}}`;
export const AnchorPin = z.unknown().meta({
  id: "AnchorPin",
  description: `kv-schemas/anchor-pin.schema.json: ${membersOf(anchorPinSchema, { keys: `[${membersOf(anchorKeySchema)}] (1–16)` })}`,
});
export const AnchorPinned = z.object({ issuer: Uri, keys: z.array(z.object({ kid, fingerprint: hex(64) })) }).meta({ id: "AnchorPinned" });
export const KeyCall = z
  .object({ issuer: z.string(), kid: z.string().optional(), fingerprint: z.string().optional() })
  .strict()
  .meta({ id: "KeyCall", description: "{issuer, kid} or {issuer, fingerprint}" });
export const ResetCall = KeyCall.extend({ reason: z.string().meta({ description: "why, for the audit entry: at most 512 characters, at least one letter, digit, punctuation mark or symbol, no control character, bidirectional control or line or paragraph separator" }) }).strict().meta({ id: "ResetCall" });
export const Revoked = z
  .object({
    issuer: Uri,
    kid: z.string(),
    fingerprint: hex(64),
    revoked_at: z.number(),
    in_flight: z.object({ chains: z.number().int(), journal_records: z.number().int() }).meta({ description: "CCS §14: live chains now broken at a hop this key signed, and journal records in flight under it (admitted under it, or delegated from a parent it signed) now marked for reconciliation (GET /v1/admin/revocations/{fingerprint} lists them)" }),
  })
  .meta({ id: "Revoked" });
const ReconciliationMark = z
  .object({
    record_id: z.string(),
    trace_id: z.string().nullable(),
    state: z.enum(JOURNAL_STATES),
    fingerprint: hex(64),
    revoked_at: z.number(),
    marked_at: z.number(),
    via: z.enum(["admission", "delegation"]).meta({ description: "what the revoked key signed: the admission itself, or the parent receipt a delegated admission was linked to (or a parent further up, when this deployment admitted that parent delegated)" }),
  })
  .meta({ id: "ReconciliationMark", description: "a journal record in flight when a key it rests on was revoked (the key that signed its admission, or one that signed the parent it was delegated from): it cannot be started, and its outcome is to be reconciled. A record carries one mark, the first revocation's that reached it" });
export const RevocationEffects = z
  .object({
    fingerprint: hex(64),
    issuer: Uri,
    kid: z.string(),
    revoked_at: z.number(),
    chains: z.array(z.object({ chain_id: z.string(), broken_at_hop: z.number().int().nullable(), seal_withdrawn: z.boolean() })).meta({ description: "live chains that took a hop signed by the key; broken_at_hop null when the hop was noted but never appended" }),
    journal_records: z.array(ReconciliationMark),
  })
  .meta({ id: "RevocationEffects", description: "what a key's revocation touched (CCS §14)" });
export const SequenceReset = z
  .object({
    issuer: Uri,
    fingerprint: hex(64),
    kid: z.string(),
    at: z.number().int().meta({ description: "Unix seconds, as the audit entry records it" }),
    reason: z.string(),
    by: z.literal("admin"),
    previous_highest: z.number().nullable(),
  })
  .meta({ id: "SequenceResetAnswer", description: "the audit entry recorded (as GET /v1/issuers/{issuer} lists it in sequence_resets), with its issuer" });

export const IssuerView = z
  .object({
    issuer: Uri,
    org_id: z.string().nullable(),
    pinned_at: z.number(),
    ledger_shards: z.number().int(),
    sequence_policy: z.enum(["repeat", "window"]),
    chain_sealer: z.boolean(),
    keys: z.array(z.object({ kid, alg: z.literal("Ed25519"), public_key: z.string(), fingerprint: hex(64), short_fingerprint: hex(16), not_before: z.number().nullable(), not_after: z.number().nullable(), revoked: z.boolean() })),
    previous_keys: z.array(z.object({ kid, fingerprint: hex(64), revoked: z.boolean() }).passthrough()).meta({ description: "keys pinned before and replaced (newest last, at most 256), each marked revoked or not" }),
    revoked: z.array(z.object({ fingerprint: hex(64), kid: z.string(), revoked_at: z.number() })).meta({ description: "the issuer's revoked keys, by fingerprint (read from its ledger)" }),
    sequence_resets: z
      .array(z.object({ fingerprint: hex(64), kid: z.string(), at: z.number(), reason: z.string(), by: z.literal("admin"), previous_highest: z.number().nullable() }))
      .max(SEQUENCE_RESETS_PAGE)
      .meta({ description: `the audited sequence resets: the newest ${SEQUENCE_RESETS_PAGE} (or the ${SEQUENCE_RESETS_PAGE} before resets_cursor), oldest first` }),
    sequence_resets_total: z.number().int().meta({ description: "how many sequence resets the issuer's ledger holds, on every page" }),
    sequence_resets_next_cursor: z
      .string()
      .nullable()
      .meta({ description: "the resets_cursor of the page of older resets (<at>_<rowid> of the oldest listed, then . and a 32-hex MAC over it and the issuer), or null when none is older" }),
    verifier_class: VerifierClass,
    audit: z.object({ report: z.string(), date: z.string() }).nullable().meta({ description: "the independent audit a Class B anchor names" }),
    level0: z.boolean().meta({ description: "pinned with a shared secret (by reference; the secret is never answered): its Level 0 receipts are verifiable" }),
    review: z
      .object({ flagged: z.boolean(), allows: z.number().int(), others: z.number().int(), threshold: z.number().int() })
      .nullable()
      .meta({ description: "CCS 13.7: verdicts counted for this issuer over its pinned life; flagged when allow-only for at least threshold (null when the counters are unavailable)" }),
  })
  .passthrough()
  .meta({ id: "IssuerView" });

const MinVerifierClass = z.record(z.string(), VerifierClass).meta({ description: "the lowest verifier class accepted, per audience; a receipt of a lower class is refused (VERIFIER_CLASS_INSUFFICIENT)" });
export const Registration = z
  .object({
    // Judged by parseRegistration (its own details); stated here so the document says what is refused.
    name: z.string().meta({ pattern: RELYING_PARTY_NAME.source, description: RELYING_PARTY_NAME_RULE }),
    audiences: z.array(z.string()).meta({ description: "1-16 audiences, none twice, each one this deployment serves (AUDIENCES)" }),
    token: z.string().optional().meta({ pattern: RELYING_PARTY_TOKEN.source, description: "32-256 of [A-Za-z0-9._~-], supplied for provisioning (else one is generated); not one of this deployment's own secrets nor a Level 0 key it holds, in any case of a hex key's digits; an even number (64 or more) of hex digits (a Level 0 key's form) only all lowercase or all uppercase" }),
    min_verifier_class: z.union([VerifierClass, jsonObject]).optional().meta({ description: "a class for every audience of the party, or {audience: class}" }) })
  .strict()
  .meta({ id: "RelyingPartyRegistration" });
export const TokenCall = z.object({ token: z.string().optional().meta({ pattern: RELYING_PARTY_TOKEN.source, description: "as at registration; generated when absent" }) }).strict().meta({ id: "RelyingPartyTokenCall" });
export const Registered = z.object({ name: z.string(), token: z.string(), audiences: z.array(Uri), min_verifier_class: MinVerifierClass.optional() }).meta({ id: "RelyingPartyToken", description: "the token is shown once and stored only as its SHA-256" });
export const RelyingParties = z.object({ next_cursor: z.string().nullable().meta({ description: "pass as `cursor` for the next page; null on the last" }), relying_parties: z.array(z.object({ name: z.string(), audiences: z.array(Uri), created_at: z.number(), min_verifier_class: MinVerifierClass.optional() })) }).meta({ id: "RelyingParties" });
export const Deleted = z.object({ name: z.string(), deleted: z.literal(true) }).meta({ id: "Deleted" });

export const EcVerifyCall = z.object({ receipt: z.unknown(), corpus: z.unknown(), events: z.unknown() }).strict().meta({ id: "EcVerifyCall", description: "docs/ec-receipts.md: the receipt, the corpus map and the ordered events" });
export const BundleCall = z
  .object({ bundle: z.unknown(), expected_bundle_digest: sha256Ref.optional().meta({ description: "the outer bundle digest the caller trusts" }) })
  .strict()
  .meta({ id: "BundleCall", description: "an ec-bundle (docs/ec-receipts.md)" });
/** At most this many contradiction pairs in a support configuration. */
const MAX_SUPPORT_PAIRS = 256;
export const SupportCall = z
  .object({
    claim: z.string(),
    spans: z.array(z.string()).min(1),
    config: z
      .object({
        threshold: z.number().gt(0).max(1).optional(),
        pairs: z.array(z.tuple([z.string().min(1), z.string().min(1)])).max(MAX_SUPPORT_PAIRS).optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .meta({ id: "SupportCall" });
export const EcAnswer = z.object({}).passthrough().meta({ id: "EcAnswer", description: "see docs/ec-receipts.md for the fields" });

export const EvidenceCall = z
  .object({
    human_approval: z.object({ approver: z.string().meta({ description: "non-empty, at most 512 UTF-8 bytes (checked with the Command's own reading: 400 MALFORMED_REQUEST)" }), request_hash: sha256Ref }).strict().optional().meta({ description: "SEC-005: an approval naming this request's request_hash" }),
    server_profile: z.enum(["none", "tls", "authenticated", "mutual-tls", "attested"]).optional().meta({ description: "the server's declared security profile, for the policy floor" }),
  })
  .strict()
  .meta({ id: "EvidenceCall", description: "the evidence a challenge named, and nothing else" });
const Gap = z
  .object({ evidence: z.enum(["human_approval", "server_profile"]), needed_by: z.string(), format: z.string(), request_hash: sha256Ref.optional(), minimum: z.string().optional() })
  .meta({ id: "EvidenceGap" });
export const Challenge = z
  .object({ trace_id: hex(16), missing: z.array(Gap).min(1), issued_at: seconds, expires_at: seconds.meta({ description: "issued_at + min(base_duration × deadline_multiplier, max_deadline)" }), respond_to: z.string() })
  .meta({ id: "Challenge", description: "rides on a deny receipt: the evidence missing, its form, and the deadline to supply it (CCS §4.7)" });

export const IntakeCall = z.unknown().meta({ id: "IntakeCall", description: "a CCS §3 Command: {intake_version: \"1.3\", agent_id, tool, params, timestamp, trace_id, runtime_context?, delegation_chain?} plus the optional audience, human_approval and server_profile (README, Intake); checked by the intake parser itself, whose failures are the Figure 3 codes" });
export const IntakeAnswer = z
  .object({
    receipt: Receipt,
    runtime_context: jsonObject.optional().meta({ description: "the runtime context the receipt binds (runtime_context_hash), the caller's plus what intake wrote; absent when it binds none" }),
    rules: z.array(z.object({ name: z.string(), verdict: z.string(), reason: z.string() }).passthrough()).meta({ description: "each rule's result (and the policy floor's, delegation's, evidence's), as rule_summary lists them" }),
    challenge: Challenge.optional(),
    idempotent_replay: z.literal(true).optional().meta({ description: "the same intake again: the admission as first issued, no new sequence or nonce" }),
  })
  .passthrough()
  .meta({ id: "IntakeAnswer" });
export const IntakeErrorCode = z.enum(INTAKE_ERROR_CODES).meta({ id: "IntakeErrorCode", description: "why POST /v1/intake issued nothing (CCS Figure 3, plus INTAKE_TRACE_CONFLICT, INTAKE_FAILED and LEVEL0_NOT_ACCEPTED for a Level 0 delegation parent); each has one retry hint" });
export const IntakeError = z
  .object({ error: z.object({ code: IntakeErrorCode, retry: z.enum(["MAY", "MUST NOT"]), detail: z.string(), trace_id: z.string().optional() }).strict() })
  .strict()
  .meta({ id: "IntakeError", description: "every intake error but the 401: {error: {code, retry, detail, trace_id?}}; never carries a receipt" });
export const ConfigAnswer = z
  .object({ config: z.object({}).passthrough(), config_hash: sha256Ref, manifest: z.object({}).passthrough().meta({ description: "the content of the manifest config.manifest_hash names: the manifest without published_at, expires_at and signature" }) })
  .meta({ id: "ConfigAnswer" });

const profileId = z.string().regex(/^[A-Za-z0-9._:\/-]{1,128}$/);
const ProfileEntry = z.object({ id: profileId, comparison_scope: z.string() }).meta({ id: "Profile" });
const ChallengePolicy = z
  .object({ base_duration: z.number(), deadline_multiplier: z.number(), max_deadline: z.number() })
  .meta({ id: "ChallengePolicy", description: "a challenge's expires_at = issued_at + min(base_duration × deadline_multiplier, max_deadline), seconds" });
export const Manifest = z
  .object({
    manifest_version: z.literal("1"),
    verifier_id: Uri,
    profiles: z.array(ProfileEntry),
    challenge_policy: ChallengePolicy,
    signing_key_fingerprint: hex(64),
    published_at: seconds,
    expires_at: seconds,
    profiles_digest: sha256Ref.meta({ description: "sha256: + SHA-256 of the RFC 8785 bytes of profiles" }),
    signature: hex(128).meta({ description: "Ed25519 over the RFC 8785 bytes of every other member" }),
  })
  .strict()
  .meta({ id: "Manifest", description: "a signed capability manifest (CCS §4.6; kv-schemas/manifest.schema.json)" });
const Binding = z.object({ config_hash: sha256Ref, manifest_hash: sha256Ref, profiles_digest: sha256Ref }).meta({ id: "ManifestBinding" });
export const ManifestPin = z.unknown().meta({ id: "ManifestPin", description: "kv-schemas/manifest-pin.schema.json: {manifest, configurations?: [{config, config_hash?, manifest?}]}" });
export const ManifestPinned = z
  .object({ verifier_id: Uri, manifest_hash: sha256Ref, profiles_digest: sha256Ref, expires_at: seconds, bindings: z.array(Binding) })
  .meta({ id: "ManifestPinned" });
export const VerifierManifest = z
  .object({
    verifier_id: Uri,
    here: z.boolean().meta({ description: "this deployment's own manifest" }),
    current: z.boolean().meta({ description: "within its validity window now and, for a pinned manifest, its signing key not past its not_after" }),
    manifest: Manifest,
    manifest_hash: sha256Ref,
    pinned_at: seconds.optional(),
    bindings: z.array(Binding).optional(),
  })
  .meta({ id: "VerifierManifest" });
/**
 * A verifier id as one is pinned (and as GET /v1/verifiers/{id}/manifest takes it): an https:// URI
 * with a host, without whitespace or control characters. Uri alone admits any non-space text after
 * the scheme (a NUL, no host), which no verifier can be named by.
 */
const VerifierId = Uri.refine((s) => isHttpsUri(s), "must be an https:// URI with a host, without whitespace or control characters");
export const ResolveCall = z
  .object({ profile: profileId, exclude: z.array(VerifierId).max(64).optional().meta({ description: "verifiers already asked: a SET_EXHAUSTED trace from elsewhere" }) })
  .strict()
  .meta({ id: "ResolveCall" });
export const Resolution = z
  .object({
    result: z.enum(["HELD", "UNDECIDED", "SET_EXHAUSTED"]).meta({ description: "a per-comparison result, never a verdict" }),
    profile: profileId,
    verifier_id: Uri.optional().meta({ description: "HELD: the verifier that holds the profile" }),
    here: z.boolean().optional(),
    reason: z.enum(["PROFILE_NOT_HELD", "NO_COMPARISON_RELATION"]).optional(),
    consult: z.array(Uri).optional().meta({ description: "PROFILE_NOT_HELD: verifiers whose pinned manifest declared the profile but is no longer current" }),
    queried_verifiers: z.array(Uri),
    complete: z.boolean().meta({ description: "false when more verifiers are pinned than one resolve reads" }),
  })
  .strict()
  .meta({ id: "Resolution" });

export const UsageCall = z.unknown().meta({ id: "UsageCall", description: "docs/usage-evidence.md: each body is checked by the usage evidence factories through the strict boundary (USAGE_EVIDENCE_INVALID, EVIDENCE_IDENTITY_MISMATCH)" });
export const UsageRecord = z.object({}).passthrough().meta({ id: "UsageRecord", description: "docs/usage-evidence.md" });

const JournalState = z.enum(JOURNAL_STATES).meta({ id: "JournalState", description: "a state of the receipt recovery lifecycle (README, The receipt journal)" });
const Effect = z.enum(EFFECT_DISPOSITIONS).meta({ id: "EffectDisposition" });
const recordId = z.string().regex(/^[0-9a-f]{32}$/).meta({ description: "32 hex: derived from the idempotency key" });
const lease = z.number().positive().max(MAX_LEASE_SECONDS).meta({ description: `seconds, at most ${MAX_LEASE_SECONDS}` });
const extensions = jsonObject.optional().meta({ description: "provider extensions by reverse-DNS namespace (com.example.name); credential-shaped values are stored redacted" });
const fence = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const toolOutput = {
  content_type: z.string().max(256).optional(),
  outcome_status: z.string().max(256).optional().meta({ description: "the outcome_status the output reports, judged by OUT-007 (outside confirmed, dispatched, indeterminate, unknown: a deny); the record's own outcome_status follows the journal" }),
  declared: z.object({ max_size: z.number().int().min(0).optional(), content_type: z.string().max(256).optional() }).strict().optional(),
  extensions,
};

/** A reconciliation's reason: at most this many characters, counted as UTF-16 code units (README). */
const MAX_REASON_CHARACTERS = 1024;
export const StartCall = z.object({ lease_seconds: lease.optional() }).strict().meta({ id: "StartCall", description: "optional: the lease length (default JOURNAL_LEASE_SECONDS)" });
export const Started = z
  .object({ trace_id: hex(16), record_id: recordId, fence, lease_until: seconds, state: z.literal("started"), receipt: Receipt })
  .meta({ id: "Started", description: "the execution lease: present `fence` when finalising" });

const oneOutcome = (v: { response?: unknown; error?: unknown; outcome?: unknown }) => ["response", "error", "outcome"].filter((k) => Object.hasOwn(v, k)).length === 1;
/** content_type, outcome_status and declared describe a tool's output, which the output rules judge: an outcome without one (indeterminate, reconciliation_required) has nothing for them to describe. */
const outputOnly = (v: { outcome?: unknown }) => !Object.hasOwn(v, "outcome") || !["content_type", "outcome_status", "declared"].some((k) => Object.hasOwn(v, k));
const OUTPUT_ONLY = "content_type, outcome_status and declared describe a response or an error: with outcome there is no output for the rules to judge";
export const FinalizeCall = z
  .object({ fence, response: z.unknown().optional(), error: z.unknown().optional(), outcome: z.literal("indeterminate").optional(), effect: Effect.optional(), ...toolOutput })
  .strict()
  .refine(oneOutcome, "exactly one of response, error and outcome")
  .refine(outputOnly, OUTPUT_ONLY)
  .meta({ id: "FinalizeCall", description: "{fence, response} | {fence, error} | {fence, outcome: \"indeterminate\"}, with an optional effect disposition" });
export const ReconcileCall = z
  .object({ response: z.unknown().optional(), error: z.unknown().optional(), outcome: z.enum(["indeterminate", "reconciliation_required"]).optional(), effect: Effect.optional(), reason: z
      .string()
      .max(MAX_REASON_CHARACTERS)
      // zod's max counts code points; README's "characters" are UTF-16 code units (an emoji counts two), as `length` counts them.
      .refine((s) => s.length <= MAX_REASON_CHARACTERS, `at most ${MAX_REASON_CHARACTERS} characters (UTF-16 code units: a character outside the BMP counts two)`)
      .optional(), ...toolOutput })
  .strict()
  .refine(oneOutcome, "exactly one of response, error and outcome")
  .refine(outputOnly, OUTPUT_ONLY)
  .meta({ id: "ReconcileCall", description: "resolves an unknown (lapsed) or indeterminate execution; outcome reconciliation_required on a lapsed lease is recorded through indeterminate (started → indeterminate → reconciliation_required, one transaction)" });
export const Finalised = z
  .object({
    trace_id: hex(16),
    record_id: recordId,
    state: JournalState,
    effect: Effect,
    outcome_status: z.enum(["confirmed", "dispatched", "indeterminate", "unknown"]).nullable(),
    receipt: Receipt.nullable().meta({ description: "the signed final receipt; null when the outcome is indeterminate (the admission receipt stands)" }),
    rules: z.array(z.object({ name: z.string(), verdict: z.string(), reason: z.string() }).passthrough()),
    idempotent_replay: z.literal(true).optional(),
  })
  .meta({ id: "Finalised" });

export const JournalRecord = z
  .object({
    record_id: recordId,
    idempotency_key: z.string(),
    action_digest: z.string(),
    attributes: z.object({}).passthrough(),
    state: JournalState,
    effect: Effect,
    revision: z.number().int(),
    fence: z.number().int(),
    lease: z.object({ fence: z.number().int(), until: seconds }).nullable(),
    lease_lapsed: z.boolean(),
    verdict: z.string().nullable(),
    outcome_status: z.enum(["confirmed", "dispatched", "indeterminate", "unknown"]).nullable(),
    created_at: seconds,
    updated_at: seconds,
  })
  .meta({ id: "JournalRecord" });
export const JournalEntry = z
  .object({
    revision: z.number().int(),
    at: seconds,
    event: z.enum(["reserve", "append", "claim", "lapse"]),
    from: JournalState.nullable(),
    to: JournalState,
    effect: Effect,
    fence: z.number().int().nullable(),
    lease_until: z.number().nullable(),
    receipt: z.object({}).passthrough().nullable(),
    detail: z.object({}).passthrough().nullable(),
    extensions: z.object({}).passthrough().nullable(),
    prev: z.string().meta({ description: "SHA-256 hex of the previous entry's canonical JSON" }),
  })
  .meta({ id: "JournalEntry" });
export const Evidence = z.object({ record: JournalRecord, history: z.array(JournalEntry), receipts: z.array(z.object({}).passthrough()), reconciliation: ReconciliationMark.nullable() }).meta({ id: "Evidence" });
export const EvidencePage = z
  .object({
    records: z.array(
      z.object({
        record_id: recordId, trace_id: z.string().nullable(), agent_id: z.string().nullable(), tool: z.string().nullable(), verdict: z.string().nullable(), state: JournalState, effect: Effect,
        outcome_status: z.string().nullable(), revision: z.number().int(), created_at: seconds, updated_at: seconds,
      }),
    ),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: "EvidencePage" });

const idempotencyKey = z.string().min(1).max(MAX_IDEMPOTENCY_KEY).regex(/^[\x21-\x7e]+$/);
export const ReserveCall = z.object({ idempotency_key: idempotencyKey, action_digest: z.string().min(1).max(256).meta({ description: "the caller's digest of the action, opaque to the journal (any form, e.g. sha256:<hex>): compared byte for byte to tell a retry (existing) from another action under the key (conflict), never parsed or recomputed" }), attributes: jsonObject.optional() }).strict().meta({ id: "JournalReserveCall" });
const transition = { to: JournalState, effect: Effect, receipt: jsonObject.optional(), detail: jsonObject.optional(), extensions };
export const AppendCall = z
  .object({ record_id: recordId, expected_revision: z.number().int().min(1), fence: fence.optional(), ...transition })
  .strict()
  .meta({ id: "JournalAppendCall" });
export const ClaimCall = z.object({ record_id: recordId, expected_revision: z.number().int().min(1).optional(), lease_seconds: lease.optional() }).strict().meta({ id: "JournalClaimCall" });
export const VerifyFenceCall = z.object({ record_id: recordId, fence }).strict().meta({ id: "JournalVerifyFenceCall" });
export const LoadCall = z.object({ record_id: recordId }).strict().meta({ id: "JournalLoadCall" });
export const LoadByIdempotencyCall = z.object({ idempotency_key: idempotencyKey }).strict().meta({ id: "JournalLoadByIdempotencyCall" });
export const JournalResult = z
  .object({ kind: z.string().meta({ description: "the port's result kind: created | existing | conflict; appended | revision-conflict | not-found | fence-conflict | illegal-transition; claimed | held | not-eligible; valid; found" }) })
  .passthrough()
  .meta({ id: "JournalResult" });

export const Stats = z
  .object({
    from: z.number().int().meta({ description: "the first minute counted, Unix seconds (a whole minute)" }),
    to: z.number().int().meta({ description: "the last minute counted, Unix seconds (a whole minute, the current one)" }),
    retention_minutes: z.number().int().meta({ description: "how far back counts are kept (1440: a `minutes` above it reads what is kept)" }),
    totals: z.record(z.string(), z.record(z.string(), z.number().int())).meta({ description: "per pinned issuer (else `unpinned`), per code: the decisions from `from` to `to`" }),
    per_minute: z.array(z.object({ minute: z.number().int(), counts: z.record(z.string(), z.number().int()) })).meta({ description: "each minute with a decision, oldest first, its counts per code (all issuers)" }),
    isolate: z.object({ anchor_cache: z.number().int(), uri_memo: z.number().int(), decision_labels: z.number().int() }).passthrough().meta({ description: "this isolate's cache sizes (anchors, URI parses, decision labels)" }),
  })
  .passthrough()
  .meta({ id: "DecisionStats", description: "decision counts per minute by pinned issuer (else unpinned) and code" });
export const Health = z.object({ ok: z.literal(true) }).meta({ id: "Health" });
export const OpenApiDocument = z.object({ openapi: z.string() }).passthrough().meta({ id: "OpenApiDocument" });

/** The receipt field names the documentation lists: the hand-written check's own list. */
export const DOCUMENTED_RECEIPT_FIELDS: readonly string[] = RECEIPT_FIELDS;
