/**
 * The closed set of failure codes a decision can carry. Clients branch on these codes and on
 * nothing else; every code is documented in the README and produced by at least one test.
 */
export const FAILURE_CODES = [
  "MALFORMED_RECEIPT",
  "FRESHNESS_EXPIRED",
  "AUDIENCE_MISMATCH",
  "UNTRUSTED_ISSUER",
  "ANCHOR_REVOKED",
  "SIGNATURE_INVALID",
  "REPLAY_DETECTED",
  "BINDING_MISMATCH",
  "OUTCOME_INDETERMINATE",
  "ENVELOPE_MALFORMED",
  "NOT_SELF_CONTAINED",
  "ORG_MISMATCH",
  "CHAIN_BROKEN",
  "HOP_LIMIT_EXCEEDED",
  "LINK_UNSIGNED",
  "CHAIN_UNSEALED",
  "RECEIPT_REPEATED",
  "SEAL_INVALID",
  "SEAL_MISMATCH",
  "SEALER_NOT_TRUSTED",
  "CONFIG_NOT_PINNED",
  "MANIFEST_STALE",
  "VERIFIER_CLASS_INSUFFICIENT",
  "VERIFIER_REVIEW_REQUIRED",
  "LEVEL0_NOT_ACCEPTED",
  "REPLAY_UNGUARDED",
  "RECEIPT_WITHDRAWN",
] as const;
export type FailureCode = (typeof FAILURE_CODES)[number];

/** Codes of a call that could not be judged at all (HTTP 4xx/5xx, same response shape). */
export const CALL_ERROR_CODES = [
  "MALFORMED_REQUEST",
  "REQUEST_TOO_LARGE",
  "EC_LIMIT_EXCEEDED",
  "UNAUTHORIZED",
  "AUDIENCE_NOT_ALLOWED",
  "RELYING_PARTY_EXISTS",
  "NOT_FOUND",
  "CHAIN_NOT_OWNED",
  "USAGE_EVIDENCE_INVALID",
  "EVIDENCE_IDENTITY_MISMATCH",
  "USAGE_RECORD_CONFLICT",
  "PROVIDER_RECORD_IN_USE",
  "JOURNAL_REVISION_CONFLICT",
  "FENCE_CONFLICT",
  "ILLEGAL_TRANSITION",
  "EXECUTION_HELD",
  "EXECUTION_NOT_ELIGIBLE",
  "ALREADY_FINALISED",
  "EXTENSION_INVALID",
  "JOURNAL_HISTORY_INVALID",
  "ANCHOR_INVALID",
  "ANCHOR_KEY_REJECTED",
  "ANCHOR_KEY_REVOKED",
  "ANCHOR_SHARDS_IMMUTABLE",
  "ANCHOR_KEY_IN_USE",
  "MANIFEST_INVALID",
  "MANIFEST_SIGNATURE_INVALID",
  "MANIFEST_EXPIRED",
  "MANIFEST_KEY_UNKNOWN",
  "MANIFEST_SUPERSEDED",
  "CHALLENGE_EXPIRED",
  "CHALLENGE_ANSWERED",
  "CHALLENGE_ANSWERS_EXHAUSTED",
  "VERIFIER_UNAVAILABLE",
  "INTERNAL_ERROR",
  "SERVICE_MISCONFIGURED",
  "SIGNING_KEY_REVOKED",
] as const;
export type CallErrorCode = (typeof CALL_ERROR_CODES)[number];

/**
 * Intake errors (CCS §3.4, Figure 3), each with the retry hint the caller must follow, plus
 * INTAKE_FAILED for any exception on the intake path (the draft's own fail-closed wrapper),
 * INTAKE_TRACE_CONFLICT for a trace_id already admitted for another Command (the journal's
 * idempotency key is the trace_id) and LEVEL0_NOT_ACCEPTED for a Level 0 receipt given as a
 * delegation's parent, bare or in an envelope (CCS §10: never accepted across a delegation; the
 * failure code of that name refuses one on the verify routes).
 * An intake error is never a receipt: the caller treats it as a denial.
 */
export const INTAKE_ERROR_CODES = [
  "INTAKE_MALFORMED",
  "INTAKE_MISSING_FIELD",
  "INTAKE_OVERFLOW",
  "INTAKE_TIMEOUT",
  "INTAKE_VERSION_UNSUPPORTED",
  "INTAKE_TRACE_CONFLICT",
  "INTAKE_FAILED",
  "LEVEL0_NOT_ACCEPTED",
] as const;
export type IntakeErrorCode = (typeof INTAKE_ERROR_CODES)[number];
export type RetryHint = "MAY" | "MUST NOT";

export const INTAKE_RETRY: Record<IntakeErrorCode, RetryHint> = {
  INTAKE_MALFORMED: "MAY",
  INTAKE_MISSING_FIELD: "MAY",
  INTAKE_OVERFLOW: "MUST NOT",
  INTAKE_TIMEOUT: "MAY",
  INTAKE_VERSION_UNSUPPORTED: "MUST NOT",
  INTAKE_TRACE_CONFLICT: "MUST NOT",
  INTAKE_FAILED: "MAY",
  LEVEL0_NOT_ACCEPTED: "MUST NOT",
};

/** HTTP status of each intake error: bad input is 4xx (well-formed evidence of a level not taken 422), a timeout 503, an internal failure 500. */
export const INTAKE_STATUS: Record<IntakeErrorCode, 400 | 409 | 413 | 422 | 500 | 503> = {
  INTAKE_MALFORMED: 400,
  INTAKE_MISSING_FIELD: 400,
  INTAKE_OVERFLOW: 413,
  INTAKE_TIMEOUT: 503,
  INTAKE_VERSION_UNSUPPORTED: 400,
  INTAKE_TRACE_CONFLICT: 409,
  INTAKE_FAILED: 500,
  LEVEL0_NOT_ACCEPTED: 422,
};

export type Severity = "CRITICAL" | "WARNING";

/** Codes that inform without invalidating: the evidence stays valid and the decision unchanged. */
export const WARNING_CODES: ReadonlySet<FailureCode> = new Set(["OUTCOME_INDETERMINATE", "MANIFEST_STALE", "VERIFIER_REVIEW_REQUIRED", "REPLAY_UNGUARDED"]);

/** The CCS §12.2 step each code belongs to; 7 is evidence propagation (CCS §11: envelopes, chains). */
export const STEP_OF: Record<FailureCode, number> = {
  MALFORMED_RECEIPT: 0,
  FRESHNESS_EXPIRED: 1,
  AUDIENCE_MISMATCH: 2,
  UNTRUSTED_ISSUER: 3,
  ANCHOR_REVOKED: 3,
  SIGNATURE_INVALID: 3,
  REPLAY_DETECTED: 4,
  BINDING_MISMATCH: 5,
  OUTCOME_INDETERMINATE: 6,
  ENVELOPE_MALFORMED: 0,
  NOT_SELF_CONTAINED: 3,
  ORG_MISMATCH: 2,
  CHAIN_BROKEN: 7,
  HOP_LIMIT_EXCEEDED: 7,
  LINK_UNSIGNED: 7,
  CHAIN_UNSEALED: 7,
  RECEIPT_REPEATED: 7,
  SEAL_INVALID: 3,
  SEAL_MISMATCH: 7,
  SEALER_NOT_TRUSTED: 3,
  CONFIG_NOT_PINNED: 3,
  MANIFEST_STALE: 3,
  VERIFIER_CLASS_INSUFFICIENT: 3,
  VERIFIER_REVIEW_REQUIRED: 3,
  LEVEL0_NOT_ACCEPTED: 0,
  REPLAY_UNGUARDED: 4,
  RECEIPT_WITHDRAWN: 3,
};

export interface Failure {
  code: FailureCode;
  severity: Severity;
  step: number;
  detail: string;
}

export function failure(code: FailureCode, detail: string): Failure {
  return {
    code,
    severity: WARNING_CODES.has(code) ? "WARNING" : "CRITICAL",
    step: STEP_OF[code],
    detail,
  };
}
