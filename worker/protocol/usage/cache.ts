/**
 * Cache attribution: whether a call reused a cache, and what usage that avoided measured against
 * a prior observation or a declared baseline. Avoided usage is token quantities only — never a
 * rate, an amount, a currency or a credit; valuing a saving is the consuming host's concern.
 */
import type { JsonValue } from "../boundary.js";
import { usage, usageReceiptAt, USAGE_METRICS, type Usage, type UsageReceipt } from "./receipt.js";
import { closed, freeze, identifier, invalid, oneOf, snapshot } from "./shape.js";

export type AvoidedUsage =
  /** Measured against the usage observed for an earlier invocation of the same work. */
  | { readonly kind: "prior-observation"; readonly prior_invocation_id: string; readonly baseline: Usage; readonly avoided: Usage }
  /** Measured against a baseline the host composition declared, by its identifier. */
  | { readonly kind: "declared-baseline"; readonly baseline_id: string; readonly baseline: Usage; readonly avoided: Usage }
  | { readonly kind: "unavailable"; readonly reason: "no-baseline" | "usage-not-reported" };

export type CacheDisposition =
  | { readonly kind: "reuse"; readonly avoided: AvoidedUsage }
  | { readonly kind: "miss" }
  | { readonly kind: "not-applicable" };

export interface CacheAttribution {
  readonly receipt: UsageReceipt;
  readonly disposition: CacheDisposition;
}

function avoidedUsage(value: JsonValue | undefined, receipt: UsageReceipt, path: (string | number)[]): AvoidedUsage {
  const kind = oneOf(closed(value, path, ["kind"], ["prior_invocation_id", "baseline_id", "baseline", "avoided", "reason"]).kind, ["prior-observation", "declared-baseline", "unavailable"], [...path, "kind"]);
  if (kind === "unavailable") {
    const a = closed(value, path, ["kind", "reason"]);
    const reason = oneOf(a.reason, ["no-baseline", "usage-not-reported"] as const, [...path, "reason"]);
    if (reason === "usage-not-reported" && receipt.usage) invalid([...path, "reason"], "the receipt does report usage");
    // Without usage nothing avoided could be measured whatever the baseline: the reason is the missing usage.
    if (reason === "no-baseline" && !receipt.usage) invalid([...path, "reason"], "usage was not reported, so the reason avoided is unavailable is usage-not-reported");
    return { kind, reason };
  }
  const ref = kind === "prior-observation" ? "prior_invocation_id" : "baseline_id";
  const a = closed(value, path, ["kind", ref, "baseline", "avoided"]);
  if (!receipt.usage) invalid([...path, "kind"], "usage was not reported, so nothing avoided can be measured: avoided is unavailable (usage-not-reported)");
  const id = identifier(a[ref], [...path, ref]);
  if (kind === "prior-observation" && id === receipt.invocation_id) invalid([...path, ref], "a prior observation is another invocation");
  const baseline = usage(a.baseline, [...path, "baseline"]);
  const avoided = usage(a.avoided, [...path, "avoided"]);
  for (const metric of USAGE_METRICS) {
    const n = avoided[metric];
    if (n === undefined) continue;
    const before = baseline[metric];
    const now = receipt.usage![metric];
    if (before === undefined || now === undefined) invalid([...path, "avoided", metric], `needs both the baseline and the receipt to hold ${metric}`);
    if (n !== before! - now!) invalid([...path, "avoided", metric], `must be the baseline minus the observation (${before! - now!})`);
    if (n < 0) invalid([...path, "avoided", metric], "the observation exceeds the baseline: nothing was avoided");
  }
  return kind === "prior-observation"
    ? { kind, prior_invocation_id: id, baseline, avoided }
    : { kind, baseline_id: id, baseline, avoided };
}

export function cacheAttributionAt(value: JsonValue | undefined, path: (string | number)[]): CacheAttribution {
  const c = closed(value, path, ["receipt", "disposition"]);
  const receipt = usageReceiptAt(c.receipt, [...path, "receipt"]);
  const where = [...path, "disposition"];
  const kind = oneOf(closed(c.disposition, where, ["kind"], ["avoided"]).kind, ["reuse", "miss", "not-applicable"], [...where, "kind"]);
  if (kind !== "reuse") return (closed(c.disposition, where, ["kind"]), { receipt, disposition: { kind } });
  const d = closed(c.disposition, where, ["kind", "avoided"]);
  return { receipt, disposition: { kind, avoided: avoidedUsage(d.avoided, receipt, [...where, "avoided"]) } };
}

/** A frozen CacheAttribution from `input`, or an EvidenceError. */
export function createCacheAttributionRecord(input: unknown): CacheAttribution {
  return freeze(cacheAttributionAt(snapshot(input), []));
}
