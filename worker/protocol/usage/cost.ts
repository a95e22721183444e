/**
 * Cost estimates: a valuation of one usage receipt against a versioned price source. The estimate
 * embeds the receipt and the exact units it valued, each equal to the receipt's observation, so
 * it can neither reinterpret token counts nor claim more coverage than the receipt has. An
 * unavailable estimate records why there is no valuation and carries no money, currency or
 * source. Estimates are descriptive: nothing here is a charge, a bill or an invoice.
 */
import type { JsonObject, JsonValue } from "../boundary.js";
import { isDecimal, MAX_DECIMAL_LENGTH, sumOfProducts } from "./decimal.js";
import { missingMetrics, priceSourceRef, usage, usageReceiptAt, USAGE_METRICS, type PriceSourceRef, type Usage, type UsageMetric, type UsageReceipt } from "./receipt.js";
import { assumptions, closed, compact, currency, EvidenceError, freeze, identifier, instant, invalid, label, oneOf, snapshot } from "./shape.js";

export const ESTIMATE_UNAVAILABLE_REASONS = ["no-pricing", "stale-pricing", "incomplete-usage", "unverified-source"] as const;
export type EstimateUnavailableReason = (typeof ESTIMATE_UNAVAILABLE_REASONS)[number];

interface Valuation {
  readonly receipt: UsageReceipt;
  /** The units valued, each equal to the receipt's observation of that metric. */
  readonly units: Usage;
  readonly price_source: PriceSourceRef;
  /** Unix seconds from which the price source's figures apply; never after the usage was observed. */
  readonly effective_at: number;
  readonly currency: string;
  /** A plain decimal string in `currency`. */
  readonly amount: string;
  readonly assumptions?: readonly string[];
}

export type CostEstimate =
  /** Every portable metric was observed and the valuation covers the receipt. */
  | ({ readonly kind: "estimated" } & Valuation)
  /** The receipt is partially attributed: `missing` is exactly what it lacks, and no amount covers it. */
  | ({ readonly kind: "partial"; readonly missing: readonly UsageMetric[] } & Valuation)
  | { readonly kind: "unavailable"; readonly receipt: UsageReceipt; readonly reason: EstimateUnavailableReason; readonly units?: Usage };

const MONEY_FIELDS = ["price_source", "effective_at", "currency", "amount", "assumptions"] as const;

function valuedUnits(value: JsonValue | undefined, receipt: UsageReceipt, path: (string | number)[]): Usage {
  const units = usage(value, path);
  for (const metric of USAGE_METRICS) {
    const n = units[metric];
    if (n === undefined) continue;
    if (receipt.usage?.[metric] === undefined) invalid([...path, metric], `values ${metric}, which the receipt did not observe`);
    if (receipt.usage![metric] !== n) invalid([...path, metric], `values ${n} ${metric} but the receipt observed ${receipt.usage![metric]}`);
  }
  return units;
}

export function costEstimateAt(value: JsonValue | undefined, path: (string | number)[]): CostEstimate {
  const e = closed(value, path, ["kind", "receipt"], ["units", "missing", "reason", ...MONEY_FIELDS]);
  const kind = oneOf(e.kind, ["estimated", "partial", "unavailable"], [...path, "kind"]);
  const receipt = usageReceiptAt(e.receipt, [...path, "receipt"]);
  if (kind === "unavailable") {
    if (MONEY_FIELDS.some((f) => Object.hasOwn(e, f))) invalid(path, "an unavailable estimate carries no money, currency, price source or assumptions");
    closed(e, path, ["kind", "receipt", "reason"], ["units"]);
    const reason = oneOf(e.reason, ESTIMATE_UNAVAILABLE_REASONS, [...path, "reason"]);
    if (receipt.attribution.kind === "unavailable") {
      if (reason !== "incomplete-usage") invalid([...path, "reason"], "a receipt without usage gives only an incomplete-usage estimate");
      if (e.units !== undefined) invalid([...path, "units"], "a receipt without usage has no units to value");
    }
    if (reason === "incomplete-usage" && receipt.attribution.kind === "attributed") invalid([...path, "reason"], "the receipt's usage is complete");
    return compact({ kind, receipt, reason, units: e.units === undefined ? undefined : valuedUnits(e.units, receipt, [...path, "units"]) });
  }
  closed(e, path, ["kind", "receipt", "units", "price_source", "effective_at", "currency", "amount", ...(kind === "partial" ? ["missing"] : [])], ["assumptions"]);
  if (receipt.attribution.kind === "unavailable") invalid([...path, "kind"], "a receipt without usage gives only an incomplete-usage estimate");
  if (kind === "estimated" && receipt.attribution.kind !== "attributed") invalid([...path, "kind"], `overstated coverage: the receipt lacks ${missingMetrics(receipt.usage).join(", ")}; the estimate is partial`);
  if (kind === "partial" && receipt.attribution.kind === "attributed") invalid([...path, "kind"], "the receipt is fully attributed; the estimate is estimated, not partial");
  const priceSource = priceSourceRef(e.price_source, [...path, "price_source"]);
  if (receipt.pricing.kind === "price-source" && (receipt.pricing.price_source.id !== priceSource.id || receipt.pricing.price_source.version !== priceSource.version)) {
    invalid([...path, "price_source"], `the receipt is to be valued against ${receipt.pricing.price_source.id}@${receipt.pricing.price_source.version}`);
  }
  const effectiveAt = instant(e.effective_at, [...path, "effective_at"]);
  if (effectiveAt > receipt.observed_at) invalid([...path, "effective_at"], "the price source took effect after the usage was observed");
  if (!isDecimal(e.amount)) invalid([...path, "amount"], `must be a plain decimal string of at most ${MAX_DECIMAL_LENGTH} characters (no sign, exponent or leading zeros)`);
  const valuation = {
    receipt,
    units: valuedUnits(e.units, receipt, [...path, "units"]),
    price_source: priceSource,
    effective_at: effectiveAt,
    currency: currency(e.currency, [...path, "currency"]),
    amount: e.amount as string,
    assumptions: assumptions(e.assumptions, [...path, "assumptions"]),
  };
  if (kind === "estimated") return compact({ kind, ...valuation });
  if (!Array.isArray(e.missing)) return invalid([...path, "missing"], "must be an array of usage metrics");
  const named = e.missing.map((m, i) => oneOf(m, USAGE_METRICS, [...path, "missing", i]));
  const lacks = missingMetrics(receipt.usage);
  if (named.length !== lacks.length || new Set(named).size !== named.length || lacks.some((m) => !named.includes(m))) {
    invalid([...path, "missing"], `must name exactly the metrics the receipt lacks (${lacks.join(", ")})`);
  }
  return compact({ kind, missing: lacks, ...valuation });
}

/** A frozen CostEstimate from `input`, or an EvidenceError. */
export function createCostEstimate(input: unknown): CostEstimate {
  return freeze(costEstimateAt(snapshot(input), []));
}

/**
 * A price source as a host composition supplies it: identity and contract version, the window in
 * which its figures apply, its currency, whether the host verified its provenance, and a decimal
 * rate per million tokens for each metric it prices.
 */
export interface PriceSource {
  readonly id: string;
  readonly version: string;
  readonly effective_at: number;
  readonly valid_until?: number;
  readonly currency: string;
  readonly verified: boolean;
  readonly per_million_tokens: { readonly [M in UsageMetric]?: string };
}

export function createPriceSource(input: unknown): PriceSource {
  return freeze(priceSourceAt(snapshot(input), []));
}

export function priceSourceAt(value: JsonValue | undefined, path: (string | number)[]): PriceSource {
  const s = closed(value, path, ["id", "version", "effective_at", "currency", "verified", "per_million_tokens"], ["valid_until"]);
  const effectiveAt = instant(s.effective_at, [...path, "effective_at"]);
  const validUntil = s.valid_until === undefined ? undefined : instant(s.valid_until, [...path, "valid_until"]);
  if (validUntil !== undefined && validUntil < effectiveAt) invalid([...path, "valid_until"], "ends before it takes effect");
  if (typeof s.verified !== "boolean") invalid([...path, "verified"], "must be a boolean");
  const rates = closed(s.per_million_tokens, [...path, "per_million_tokens"], [], USAGE_METRICS) as JsonObject;
  const out: Record<string, string> = {};
  for (const metric of USAGE_METRICS) {
    const r = rates[metric];
    if (r === undefined) continue;
    if (!isDecimal(r)) invalid([...path, "per_million_tokens", metric], `must be a plain decimal string of at most ${MAX_DECIMAL_LENGTH} characters`);
    out[metric] = r as string;
  }
  if (Object.keys(out).length === 0) invalid([...path, "per_million_tokens"], "prices no metric");
  return compact({
    id: identifier(s.id, [...path, "id"]),
    version: label(s.version, [...path, "version"]),
    effective_at: effectiveAt,
    valid_until: validUntil,
    currency: currency(s.currency, [...path, "currency"]),
    verified: s.verified as boolean,
    per_million_tokens: out,
  });
}

/**
 * The estimate a receipt gets from a price source (or from none), derived in this order: no
 * usage → incomplete-usage; no source → no-pricing; an unverified source → unverified-source; a
 * source whose window does not cover the observation → stale-pricing; no priced metric observed →
 * incomplete-usage; otherwise the exact sum of observed units × rates, `estimated` for a fully
 * attributed receipt and `partial` for a partial one. A source other than the one the receipt
 * names is refused, and so is a sum longer than a decimal may be (MAX_DECIMAL_LENGTH), with an
 * error naming the computed amount.
 */
export function deriveCostEstimate(receipt: UsageReceipt, source: PriceSource | null, options: { assumptions?: readonly string[] } = {}): CostEstimate {
  // Assumptions are checked whatever the outcome: an unavailable estimate carries none, but a malformed list is refused, not dropped.
  const labels = options.assumptions === undefined ? undefined : assumptions(snapshot(options.assumptions), ["assumptions"]);
  const unavailable = (reason: EstimateUnavailableReason) => createCostEstimate({ kind: "unavailable", receipt, reason });
  if (!receipt.usage) return unavailable("incomplete-usage");
  if (!source) return unavailable("no-pricing");
  if (receipt.pricing.kind === "price-source" && (receipt.pricing.price_source.id !== source.id || receipt.pricing.price_source.version !== source.version)) {
    throw new EvidenceError("invalid", ["price_source"], `the receipt is to be valued against ${receipt.pricing.price_source.id}@${receipt.pricing.price_source.version}`);
  }
  if (!source.verified) return unavailable("unverified-source");
  if (receipt.observed_at < source.effective_at || (source.valid_until !== undefined && receipt.observed_at > source.valid_until)) return unavailable("stale-pricing");
  const units: Record<string, number> = {};
  const terms: { count: number; rate: string }[] = [];
  for (const metric of USAGE_METRICS) {
    const rate = source.per_million_tokens[metric];
    const count = receipt.usage[metric];
    if (rate === undefined || count === undefined) continue;
    units[metric] = count;
    terms.push({ count, rate });
  }
  if (terms.length === 0) return unavailable("incomplete-usage");
  const amount = sumOfProducts(terms, 6);
  // Every decimal on the wire is at most 64 characters; rates within it can still multiply out past it.
  if (amount.length > MAX_DECIMAL_LENGTH) {
    const shown = amount.length > 24 ? `${amount.slice(0, 12)}…${amount.slice(-8)}` : amount;
    invalid(["price_source", "per_million_tokens"], `the computed amount (${shown}, ${amount.length} characters: observed units × rate / 1,000,000) exceeds the ${MAX_DECIMAL_LENGTH}-character limit of a decimal amount; the price source's rates are too large or too finely divided for these counts`);
  }
  const valuation = {
    receipt,
    units,
    price_source: { id: source.id, version: source.version },
    effective_at: source.effective_at,
    currency: source.currency,
    amount,
    ...(labels?.length ? { assumptions: labels } : {}),
  };
  return receipt.attribution.kind === "partial"
    ? createCostEstimate({ kind: "partial", missing: receipt.attribution.missing, ...valuation })
    : createCostEstimate({ kind: "estimated", ...valuation });
}
