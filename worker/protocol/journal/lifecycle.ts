/**
 * The receipt recovery lifecycle of the tool receipt journal: its sixteen states, the edges
 * between them (exactly those of the llm-core evidence lifecycle, nothing added), the effect
 * dispositions each state may carry, and the CCS outcome_status a record reports. State says
 * where the execution is; the effect disposition says what it did to the world. Nothing before
 * `started` has crossed the durable started boundary, so it can only be `not-started`.
 */

export const JOURNAL_STATES = [
  "reserved",
  "awaiting_policy",
  "awaiting_approval",
  "ready",
  "started",
  "succeeded",
  "failed_after_start",
  "indeterminate",
  "reconciliation_required",
  "compensation_required",
  "compensating",
  "compensated",
  "compensation_failed",
  "denied",
  "expired",
  "cancelled_before_start",
] as const;
export type JournalState = (typeof JOURNAL_STATES)[number];

export const EFFECT_DISPOSITIONS = ["not-started", "none", "applied", "partial", "unknown", "compensated"] as const;
export type EffectDisposition = (typeof EFFECT_DISPOSITIONS)[number];

/** CCS §4.5: what is known of an admitted action's outcome. Not a verdict. */
export type OutcomeStatus = "confirmed" | "dispatched" | "indeterminate" | "unknown";

/** Every allowed edge; an edge not listed here is an illegal transition. */
export const TRANSITIONS: Readonly<Record<JournalState, readonly JournalState[]>> = {
  reserved: ["awaiting_policy", "denied", "expired", "cancelled_before_start"],
  awaiting_policy: ["awaiting_approval", "ready", "denied", "expired", "cancelled_before_start"],
  awaiting_approval: ["awaiting_approval", "ready", "denied", "expired", "cancelled_before_start"],
  ready: ["started", "denied", "expired", "cancelled_before_start"],
  started: ["started", "succeeded", "failed_after_start", "indeterminate"],
  indeterminate: ["succeeded", "failed_after_start", "reconciliation_required"],
  succeeded: ["compensation_required"],
  failed_after_start: ["compensation_required"],
  compensation_required: ["compensating"],
  compensating: ["compensated", "compensation_failed"],
  reconciliation_required: [],
  compensated: [],
  compensation_failed: [],
  denied: [],
  expired: [],
  cancelled_before_start: [],
};

const BEFORE_START: readonly EffectDisposition[] = ["not-started"];

/**
 * The effect dispositions a record in each state may carry. A running or unresolved execution
 * cannot yet establish its effect (`unknown`); a success applied all, part or none of it; a
 * compensation is only needed, or under way, for an effect that applied at least in part.
 */
export const EFFECTS: Readonly<Record<JournalState, readonly EffectDisposition[]>> = {
  reserved: BEFORE_START,
  awaiting_policy: BEFORE_START,
  awaiting_approval: BEFORE_START,
  ready: BEFORE_START,
  denied: BEFORE_START,
  expired: BEFORE_START,
  cancelled_before_start: BEFORE_START,
  started: ["unknown"],
  succeeded: ["applied", "partial", "none"],
  failed_after_start: ["none", "partial", "unknown"],
  indeterminate: ["unknown"],
  reconciliation_required: ["unknown"],
  compensation_required: ["applied", "partial"],
  compensating: ["applied", "partial"],
  compensated: ["compensated"],
  compensation_failed: ["applied", "partial", "unknown"],
};

export const isJournalState = (v: unknown): v is JournalState => typeof v === "string" && (JOURNAL_STATES as readonly string[]).includes(v);
export const isEffectDisposition = (v: unknown): v is EffectDisposition => typeof v === "string" && (EFFECT_DISPOSITIONS as readonly string[]).includes(v);

export const isAllowedTransition = (from: JournalState, to: JournalState): boolean => TRANSITIONS[from].includes(to);
export const isConsistentEffect = (state: JournalState, effect: EffectDisposition): boolean => EFFECTS[state].includes(effect);

/** States with no outgoing edge. */
export const isTerminal = (state: JournalState): boolean => TRANSITIONS[state].length === 0;

/**
 * States of a record whose outcome is not yet settled: evidence in flight. When the key its
 * admission was signed under is revoked (CCS §14), such a record is marked for reconciliation.
 */
export const IN_FLIGHT_STATES: readonly JournalState[] = ["reserved", "awaiting_policy", "awaiting_approval", "ready", "started", "indeterminate"];

/**
 * The outcome_status a record reports (CCS §4.2, §4.5): a denial is confirmed at admission, also
 * one awaiting a challenge's evidence (`awaiting_approval` with a deny as its latest receipt,
 * `verdict`: nothing was dispatched, and if no evidence comes the deny stands); an admitted
 * action is dispatched until its result is recorded; a started execution whose lease
 * lapsed without a result is `unknown` (positive evidence that it did not complete under
 * observation) until it is reconciled; a result the runtime could not see is `indeterminate`.
 * Before a decision, and for executions that never started, there is no outcome to report.
 */
export function outcomeStatus(state: JournalState, leaseLapsed: boolean, verdict: string | null = null): OutcomeStatus | null {
  switch (state) {
    case "denied":
    case "succeeded":
    case "failed_after_start":
    case "compensation_required":
    case "compensating":
    case "compensated":
    case "compensation_failed":
      return "confirmed";
    case "awaiting_approval":
      return verdict === "deny" ? "confirmed" : "dispatched";
    case "ready":
      return "dispatched";
    case "started":
      return leaseLapsed ? "unknown" : "dispatched";
    case "indeterminate":
    case "reconciliation_required":
      return "indeterminate";
    default:
      return null;
  }
}
