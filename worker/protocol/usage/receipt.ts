/**
 * Usage receipts: what one model invocation was observed to use, against the exact invocation
 * and the resolved model/profile identity. Attribution says how much of the portable usage was
 * observed — all of it, part of it (naming exactly what is missing), or none (with a bounded
 * reason, never a zero) — and the pricing disposition is always explicit, so a receipt can never
 * be read as a cost claim.
 */
import type { JsonObject, JsonValue } from "../boundary.js";
import { closed, compact, freeze, identifier, instant, invalid, label, oneOf, snapshot } from "./shape.js";

/** The portable usage metrics, in their canonical order. */
export const USAGE_METRICS = ["input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/** Observed token counts: each present metric a non-negative safe integer. */
export type Usage = { readonly [M in UsageMetric]?: number };

/** Why no usage was observed. */
export const USAGE_UNAVAILABLE_REASONS = ["not-reported", "not-supported"] as const;
export type UsageUnavailableReason = (typeof USAGE_UNAVAILABLE_REASONS)[number];

export type Attribution =
  | { readonly kind: "attributed" }
  | { readonly kind: "partial"; readonly missing: readonly UsageMetric[] }
  | { readonly kind: "unavailable"; readonly reason: UsageUnavailableReason };

export const PRICING_UNAVAILABLE_REASONS = ["not-provided", "stale", "unverified-source"] as const;
export type PricingUnavailableReason = (typeof PRICING_UNAVAILABLE_REASONS)[number];

/** A price source by identity: its external id and the contract version. */
export interface PriceSourceRef {
  readonly id: string;
  readonly version: string;
}

/**
 * What the receipt says about pricing: `unavailable` with its reason, or the price source the
 * host composition names for valuing it (a cost estimate of this receipt must then use exactly
 * that source). Either way the receipt itself carries no money.
 */
export type PricingDisposition =
  | { readonly kind: "unavailable"; readonly reason: PricingUnavailableReason }
  | { readonly kind: "price-source"; readonly price_source: PriceSourceRef };

/** The resolved identity a call ran under: provider, concrete model, and the profile that resolved to it. */
export interface ModelIdentity {
  readonly provider: string;
  readonly model: string;
  readonly profile?: string;
}

export interface UsageReceipt {
  readonly invocation_id: string;
  /** Unix seconds at which the usage was observed. */
  readonly observed_at: number;
  readonly model: ModelIdentity;
  readonly provider_request_id?: string;
  /** Exactly the observed metrics; absent when attribution is `unavailable`. */
  readonly usage?: Usage;
  readonly attribution: Attribution;
  readonly pricing: PricingDisposition;
}

const RECEIPT_FIELDS = ["invocation_id", "observed_at", "model", "attribution", "pricing"] as const;

export function modelIdentity(value: JsonValue | undefined, path: (string | number)[]): ModelIdentity {
  const m = closed(value, path, ["provider", "model"], ["profile"]);
  return compact({
    provider: identifier(m.provider, [...path, "provider"]),
    model: label(m.model, [...path, "model"]),
    profile: m.profile === undefined ? undefined : label(m.profile, [...path, "profile"]),
  });
}

export function priceSourceRef(value: JsonValue | undefined, path: (string | number)[]): PriceSourceRef {
  const s = closed(value, path, ["id", "version"]);
  return { id: identifier(s.id, [...path, "id"]), version: label(s.version, [...path, "version"]) };
}

/** Observed usage: known metrics only, each a non-negative safe integer; an empty object is not usage. */
export function usage(value: JsonValue | undefined, path: (string | number)[]): Usage {
  const u = closed(value, path, [], USAGE_METRICS);
  const out: Record<string, number> = {};
  for (const metric of USAGE_METRICS) {
    const n = u[metric];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) invalid([...path, metric], "must be a non-negative integer token count");
    out[metric] = n as number;
  }
  if (Object.keys(out).length === 0) invalid(path, "usage with no metric observed is not usage: say attribution unavailable instead");
  return out;
}

export const missingMetrics = (u: Usage | undefined): UsageMetric[] => USAGE_METRICS.filter((m) => u?.[m] === undefined);

function attribution(value: JsonValue | undefined, observed: Usage | undefined, path: (string | number)[]): Attribution {
  const kind = oneOf(closed(value, path, ["kind"], ["missing", "reason"]).kind, ["attributed", "partial", "unavailable"], [...path, "kind"]);
  const a = value as JsonObject;
  const absent = missingMetrics(observed);
  if (kind === "attributed") {
    closed(a, path, ["kind"]);
    if (absent.length) invalid(path, `attributed overstates coverage: ${absent.join(", ")} not observed`);
    return { kind };
  }
  if (kind === "partial") {
    closed(a, path, ["kind", "missing"]);
    if (!observed) invalid([...path, "kind"], "partial attribution needs observed usage; with none it is unavailable");
    if (!Array.isArray(a.missing)) return invalid([...path, "missing"], "must be an array of usage metrics");
    const named = a.missing.map((m, i) => oneOf(m, USAGE_METRICS, [...path, "missing", i]));
    if (new Set(named).size !== named.length) invalid([...path, "missing"], "names a metric twice");
    if (named.length !== absent.length || absent.some((m) => !named.includes(m))) {
      invalid([...path, "missing"], `must name exactly the metrics not observed (${absent.join(", ") || "none"})`);
    }
    if (absent.length === 0) invalid([...path, "kind"], "every metric was observed: the attribution is attributed");
    return { kind, missing: absent };
  }
  closed(a, path, ["kind", "reason"]);
  if (observed) invalid(path, "unavailable attribution carries no usage: an unreported metric is absent, never zero");
  return { kind, reason: oneOf(a.reason, USAGE_UNAVAILABLE_REASONS, [...path, "reason"]) };
}

export function pricingDisposition(value: JsonValue | undefined, path: (string | number)[]): PricingDisposition {
  const kind = oneOf(closed(value, path, ["kind"], ["reason", "price_source"]).kind, ["unavailable", "price-source"], [...path, "kind"]);
  if (kind === "unavailable") {
    const p = closed(value, path, ["kind", "reason"]);
    return { kind, reason: oneOf(p.reason, PRICING_UNAVAILABLE_REASONS, [...path, "reason"]) };
  }
  const p = closed(value, path, ["kind", "price_source"]);
  return { kind, price_source: priceSourceRef(p.price_source, [...path, "price_source"]) };
}

/** Validates an already snapshotted receipt; `path` places it inside an enclosing record. */
export function usageReceiptAt(value: JsonValue | undefined, path: (string | number)[]): UsageReceipt {
  const r = closed(value, path, RECEIPT_FIELDS, ["provider_request_id", "usage"]);
  const observed = r.usage === undefined ? undefined : usage(r.usage, [...path, "usage"]);
  return compact({
    invocation_id: identifier(r.invocation_id, [...path, "invocation_id"]),
    observed_at: instant(r.observed_at, [...path, "observed_at"]),
    model: modelIdentity(r.model, [...path, "model"]),
    provider_request_id: r.provider_request_id === undefined ? undefined : label(r.provider_request_id, [...path, "provider_request_id"]),
    usage: observed,
    attribution: attribution(r.attribution, observed, [...path, "attribution"]),
    pricing: pricingDisposition(r.pricing, [...path, "pricing"]),
  });
}

/** A frozen UsageReceipt from `input`, or an EvidenceError. */
export function createUsageReceipt(input: unknown): UsageReceipt {
  return freeze(usageReceiptAt(snapshot(input), []));
}

/**
 * The portable response of a completed model call, as this service reads it: `model.profile` is
 * the resolved identity, `usage` and `request_id` are observed when the provider reported them;
 * `content`, `warnings`, `errors`, `finish_reason` and `native` (provider metadata, already
 * redacted) are accepted only to be dropped.
 */
const RESPONSE_FIELDS = ["status", "model"] as const;
const RESPONSE_DROPPED = ["content", "warnings", "errors", "finish_reason", "native"] as const;

export interface ObservedInvocation {
  invocation_id: string;
  /** Unix seconds. */
  observed_at: number;
  /** Defaults to unavailable: not-provided. */
  pricing?: PricingDisposition;
}

/**
 * A usage receipt from an observed, completed model response: identity from `model.profile`, the
 * observed usage and request id kept, everything else dropped. A response without usage (or whose
 * metrics are all null) becomes `unavailable: not-reported`, never zeros; a metric reported as null
 * is not observed, so one reporting some metrics is `partial`.
 */
export function createObservedModelUsageReceipt(response: unknown, invocation: unknown): UsageReceipt {
  const res = closed(snapshot(response), ["response"], RESPONSE_FIELDS, ["usage", "request_id", ...RESPONSE_DROPPED]);
  if (res.status !== "completed") invalid(["response", "status"], "only a completed response is observed usage");
  const model = closed(res.model, ["response", "model"], ["profile"]);
  const inv = closed(snapshot(invocation), ["invocation"], ["invocation_id", "observed_at"], ["pricing"]);
  const reported = res.usage === undefined || res.usage === null ? undefined : closed(res.usage, ["response", "usage"], [], USAGE_METRICS);
  const observed: Record<string, JsonValue> = {};
  for (const metric of USAGE_METRICS) if (reported?.[metric] !== undefined && reported[metric] !== null) observed[metric] = reported[metric];
  const present = Object.keys(observed).length > 0;
  const absent = USAGE_METRICS.filter((m) => observed[m] === undefined);
  return createUsageReceipt({
    invocation_id: inv.invocation_id,
    observed_at: inv.observed_at,
    model: model.profile,
    ...(res.request_id === undefined || res.request_id === null ? {} : { provider_request_id: res.request_id }),
    ...(present ? { usage: observed } : {}),
    attribution: !present ? { kind: "unavailable", reason: "not-reported" } : absent.length ? { kind: "partial", missing: absent } : { kind: "attributed" },
    pricing: inv.pricing ?? { kind: "unavailable", reason: "not-provided" },
  });
}
