import { failure, type Failure } from "../codes.js";
import type { Receipt, Verdict } from "../receipt.js";

/** CCS Figure 9 enforcement actions. */
export type EnforcementAction = "proceed" | "proceed_pending_reconciliation" | "conservative" | "block" | "defer";
export type OutcomeStatus = "confirmed" | "dispatched" | "indeterminate" | "unknown";
export type ReportedOutcome = "indeterminate" | "unknown";

export interface Enforcement {
  action: EnforcementAction;
  verdict: Verdict | null;
  outcome_status: OutcomeStatus | null;
}

/** outcome_status is derived, never carried: deny and finalised allow are confirmed, an admission allow is dispatched. */
export function deriveOutcomeStatus(r: Receipt, reported?: ReportedOutcome): OutcomeStatus {
  if (r.verdict === "deny") return "confirmed";
  if (reported) return reported;
  return r.response_hash ? "confirmed" : "dispatched";
}

/**
 * Step 6. A receipt that failed any critical check blocks. A valid deny blocks (it is evidence,
 * not authority); escalate defers whatever the outcome; an indeterminate or unknown outcome of
 * an allow is handled conservatively and warned about.
 */
export function mapOutcome(r: Receipt, valid: boolean, reported?: ReportedOutcome): { enforcement: Enforcement; warnings: Failure[] } {
  const outcome_status = deriveOutcomeStatus(r, reported);
  const enforcement = (action: EnforcementAction): Enforcement => ({ action, verdict: r.verdict, outcome_status });
  if (!valid) return { enforcement: enforcement("block"), warnings: [] };
  if (r.verdict === "deny") return { enforcement: enforcement("block"), warnings: [] };
  if (r.verdict === "escalate") return { enforcement: enforcement("defer"), warnings: [] };
  if (outcome_status === "indeterminate" || outcome_status === "unknown") {
    return {
      enforcement: enforcement("conservative"),
      warnings: [failure("OUTCOME_INDETERMINATE", `the outcome of this allowed action is reported ${outcome_status}`)],
    };
  }
  return { enforcement: enforcement(outcome_status === "confirmed" ? "proceed" : "proceed_pending_reconciliation"), warnings: [] };
}
