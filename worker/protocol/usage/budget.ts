/**
 * Budget decision evidence: what a host composition decided at a phase of one invocation against
 * one named limit. It records the decision; it is not a budget controller, and it carries no
 * usage of its own, so it cannot rewrite what the usage receipt observed. Riding on a receipt, its
 * invocation is the receipt's, exactly.
 */
import type { JsonValue } from "../boundary.js";
import { DECIMAL, isDecimal, MAX_DECIMAL_LENGTH } from "./decimal.js";
import { USAGE_METRICS, type UsageMetric, type UsageReceipt } from "./receipt.js";
import { closed, compact, currency, EvidenceError, freeze, identifier, instant, invalid, oneOf, snapshot } from "./shape.js";

export const BUDGET_DECISIONS = ["allow", "warn", "stop", "overrun"] as const;
export type BudgetDecision = (typeof BUDGET_DECISIONS)[number];
export const BUDGET_PHASES = ["before-invocation", "during-invocation", "after-invocation"] as const;
export type BudgetPhase = (typeof BUDGET_PHASES)[number];

export interface BudgetLimit {
  /** The host's name for the limit. */
  readonly name: string;
  /** A token metric, or `cost` (then `currency` says in what). */
  readonly metric: UsageMetric | "cost";
  /** A decimal string: whole tokens for a token metric. */
  readonly threshold: string;
  readonly currency?: string;
}

export interface BudgetDecisionEvidence {
  readonly invocation_id: string;
  readonly decision: BudgetDecision;
  readonly phase: BudgetPhase;
  readonly limit: BudgetLimit;
  /** Unix seconds. */
  readonly decided_at: number;
}

const WHOLE = /^(0|[1-9][0-9]*)$/;

export function budgetDecisionAt(value: JsonValue | undefined, path: (string | number)[]): BudgetDecisionEvidence {
  const b = closed(value, path, ["invocation_id", "decision", "phase", "limit", "decided_at"]);
  const decision = oneOf(b.decision, BUDGET_DECISIONS, [...path, "decision"]);
  const phase = oneOf(b.phase, BUDGET_PHASES, [...path, "phase"]);
  if (decision === "overrun" && phase === "before-invocation") invalid([...path, "decision"], "nothing has been used before the invocation, so nothing can have overrun");
  const l = closed(b.limit, [...path, "limit"], ["name", "metric", "threshold"], ["currency"]);
  const metric = oneOf(l.metric, [...USAGE_METRICS, "cost"] as const, [...path, "limit", "metric"]);
  if (!isDecimal(l.threshold) || (metric !== "cost" && !WHOLE.test(l.threshold as string))) {
    invalid([...path, "limit", "threshold"], metric === "cost" ? `must be a plain decimal string (${DECIMAL.source}) of at most ${MAX_DECIMAL_LENGTH} characters` : `must be a whole number of tokens, as a string of at most ${MAX_DECIMAL_LENGTH} digits`);
  }
  if ((metric === "cost") !== (l.currency !== undefined)) invalid([...path, "limit", "currency"], "a cost limit names its currency; a token limit has none");
  return {
    invocation_id: identifier(b.invocation_id, [...path, "invocation_id"]),
    decision,
    phase,
    limit: compact({ name: identifier(l.name, [...path, "limit", "name"]), metric, threshold: l.threshold as string, currency: l.currency === undefined ? undefined : currency(l.currency, [...path, "limit", "currency"]) }),
    decided_at: instant(b.decided_at, [...path, "decided_at"]),
  };
}

/**
 * A frozen BudgetDecisionEvidence from `input`, or an EvidenceError. With `receipt`, the decision
 * rides on that usage receipt and must be about its invocation.
 */
export function createBudgetDecisionEvidence(input: unknown, options: { receipt?: UsageReceipt } = {}): BudgetDecisionEvidence {
  const evidence = budgetDecisionAt(snapshot(input), []);
  if (options.receipt && options.receipt.invocation_id !== evidence.invocation_id) {
    throw new EvidenceError("identity", ["invocation_id"], "a budget decision riding on a usage receipt is about the receipt's invocation");
  }
  return freeze(evidence);
}

/**
 * Budget evidence that sits oddly beside the receipt it rides on. Not refused: the decision is the
 * host composition's, and its record is evidence of what was decided, right or wrong — and a limit
 * may be cumulative (a daily budget), covering usage this receipt does not show. Only after the
 * invocation, for a token limit whose metric the receipt observed:
 * - `allow-over-threshold`: allowed, though this invocation alone used more than the threshold;
 * - `overrun-within-threshold`: an overrun, though this invocation used no more than the
 *   threshold (it rests on usage outside this receipt, such as a cumulative limit's).
 */
export type BudgetFlagKind = "allow-over-threshold" | "overrun-within-threshold";

export interface BudgetFlag {
  /** The decision's position in `budget_decisions`. */
  readonly index: number;
  readonly flag: BudgetFlagKind;
  readonly metric: UsageMetric;
  readonly observed: number;
  readonly threshold: string;
}

export function budgetFlags(receipt: UsageReceipt, decisions: readonly BudgetDecisionEvidence[]): BudgetFlag[] {
  const flags: BudgetFlag[] = [];
  decisions.forEach((d, index) => {
    const { metric, threshold } = d.limit;
    if (d.phase !== "after-invocation" || metric === "cost") return;
    const observed = receipt.usage?.[metric];
    if (observed === undefined) return;
    const over = BigInt(observed) > BigInt(threshold);
    if (d.decision === "allow" && over) flags.push({ index, flag: "allow-over-threshold", metric, observed, threshold });
    if (d.decision === "overrun" && !over) flags.push({ index, flag: "overrun-within-threshold", metric, observed, threshold });
  });
  return flags;
}
