import { describe, expect, it } from "vitest";
import { createBudgetDecisionEvidence } from "../../worker/protocol/usage/budget.js";
import { createCacheAttributionRecord } from "../../worker/protocol/usage/cache.js";
import { createCostEstimate, createPriceSource, deriveCostEstimate } from "../../worker/protocol/usage/cost.js";
import { decimalEquals, isDecimal, normalizeDecimal, sumOfProducts } from "../../worker/protocol/usage/decimal.js";
import { createObservedModelUsageReceipt, createUsageReceipt } from "../../worker/protocol/usage/receipt.js";
import { createProviderCostRecord, createReconciledCost, deriveReconciliationDisposition, reconcileCost } from "../../worker/protocol/usage/reconcile.js";
import { EvidenceError, type EvidenceErrorKind } from "../../worker/protocol/usage/shape.js";

const FULL = { input_tokens: 1200, output_tokens: 300, total_tokens: 1500, reasoning_tokens: 100, cached_input_tokens: 200 };
const MODEL = { provider: "openai", model: "gpt-4.1-2025-04-14", profile: "fast-chat" };

const receiptInput = (extra: Record<string, unknown> = {}) => ({
  invocation_id: "inv-1",
  observed_at: 1_800_000_000,
  model: MODEL,
  provider_request_id: "req_abc",
  usage: FULL,
  attribution: { kind: "attributed" },
  pricing: { kind: "unavailable", reason: "not-provided" },
  ...extra,
});
const attributed = () => createUsageReceipt(receiptInput());
const partial = () => createUsageReceipt(receiptInput({ usage: { input_tokens: 1200, output_tokens: 300 }, attribution: { kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"] } }));
const unreported = () => createUsageReceipt(receiptInput({ usage: undefined, attribution: { kind: "unavailable", reason: "not-reported" } }));

const SOURCE = { id: "openai-list-prices", version: "2025-06", effective_at: 1_700_000_000, currency: "USD", verified: true, per_million_tokens: { input_tokens: "2.00", output_tokens: "8", cached_input_tokens: "0.50" } };

/** The EvidenceError `build` throws, or a failure if it builds. */
function refused(build: () => unknown, kind: EvidenceErrorKind = "invalid"): string {
  try {
    build();
  } catch (err) {
    expect(err).toBeInstanceOf(EvidenceError);
    expect((err as EvidenceError).kind).toBe(kind);
    return (err as EvidenceError).message;
  }
  throw new Error("the record was accepted");
}

describe("usage receipts: attribution is observed, never inferred", () => {
  it("attributed: every portable metric observed; the record is frozen", () => {
    const r = attributed();
    expect(r.attribution).toEqual({ kind: "attributed" });
    expect(r.usage).toEqual(FULL);
    expect(Object.isFrozen(r) && Object.isFrozen(r.usage) && Object.isFrozen(r.model)).toBe(true);
  });

  it("attributed with a metric not observed is refused as overstated coverage", () => {
    expect(refused(() => createUsageReceipt(receiptInput({ usage: { input_tokens: 1, output_tokens: 2 } })))).toMatch(/overstates coverage/);
  });

  it("partial names exactly the missing metrics", () => {
    expect(partial().attribution).toEqual({ kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"] });
    const usage = { input_tokens: 1, output_tokens: 2 };
    for (const missing of [["total_tokens"], ["total_tokens", "reasoning_tokens", "cached_input_tokens", "input_tokens"], ["total_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"], []]) {
      expect(refused(() => createUsageReceipt(receiptInput({ usage, attribution: { kind: "partial", missing } })))).toMatch(/missing/);
    }
  });

  it("partial with nothing missing, or with no usage at all, is refused", () => {
    expect(refused(() => createUsageReceipt(receiptInput({ attribution: { kind: "partial", missing: [] } })))).toMatch(/attributed/);
    expect(refused(() => createUsageReceipt(receiptInput({ usage: undefined, attribution: { kind: "partial", missing: ["input_tokens"] } })))).toMatch(/unavailable/);
  });

  it("unavailable carries a bounded reason and no usage: a zero where nothing was reported is refused", () => {
    expect(unreported().attribution).toEqual({ kind: "unavailable", reason: "not-reported" });
    expect(unreported().usage).toBeUndefined();
    expect(createUsageReceipt(receiptInput({ usage: undefined, attribution: { kind: "unavailable", reason: "not-supported" } })).attribution.kind).toBe("unavailable");
    const zeros = { input_tokens: 0, output_tokens: 0, total_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 };
    expect(refused(() => createUsageReceipt(receiptInput({ usage: zeros, attribution: { kind: "unavailable", reason: "not-reported" } })))).toMatch(/never zero/);
    expect(refused(() => createUsageReceipt(receiptInput({ usage: undefined, attribution: { kind: "unavailable", reason: "unknown" } })))).toMatch(/reason/);
    expect(refused(() => createUsageReceipt(receiptInput({ usage: {}, attribution: { kind: "unavailable", reason: "not-reported" } })))).toMatch(/not usage/);
  });

  it("token counts are non-negative integers", () => {
    for (const n of [-1, 1.5, "12"]) expect(refused(() => createUsageReceipt(receiptInput({ usage: { ...FULL, input_tokens: n } })))).toMatch(/token count/);
  });

  it("each pricing disposition; an unknown reason or a money field is refused", () => {
    for (const reason of ["not-provided", "stale", "unverified-source"]) expect(createUsageReceipt(receiptInput({ pricing: { kind: "unavailable", reason } })).pricing).toEqual({ kind: "unavailable", reason });
    const named = createUsageReceipt(receiptInput({ pricing: { kind: "price-source", price_source: { id: "p", version: "1" } } }));
    expect(named.pricing).toEqual({ kind: "price-source", price_source: { id: "p", version: "1" } });
    expect(refused(() => createUsageReceipt(receiptInput({ pricing: { kind: "unavailable", reason: "expensive" } })))).toMatch(/reason/);
    expect(refused(() => createUsageReceipt(receiptInput({ pricing: { kind: "unavailable", reason: "stale", amount: "0" } })))).toMatch(/unknown field/);
    expect(refused(() => createUsageReceipt(receiptInput({ pricing: undefined })))).toMatch(/required/);
  });

  it("the shape is closed and each identity field has its form", () => {
    expect(refused(() => createUsageReceipt(receiptInput({ cost: "1.00" })))).toMatch(/unknown field "cost"/);
    expect(refused(() => createUsageReceipt(receiptInput({ invocation_id: "has space" })))).toMatch(/invocation_id/);
    expect(refused(() => createUsageReceipt(receiptInput({ model: { provider: "openai" } })))).toMatch(/model/);
    expect(refused(() => createUsageReceipt(receiptInput({ observed_at: -1 })))).toMatch(/observed_at/);
    // A label's rule is said whole: a space at either end is refused, and the message names it.
    for (const model of [" gpt", "gpt "]) {
      expect(refused(() => createUsageReceipt(receiptInput({ model: { ...MODEL, model } })))).toMatch(/no space at either end \(at model\.model\)/);
    }
    expect(createUsageReceipt(receiptInput({ model: { ...MODEL, model: "g p t" } })).model.model).toBe("g p t");
  });

  it("goes through the boundary: a getter, a class instance or a credential is refused before any rule", () => {
    expect(refused(() => createUsageReceipt({ ...receiptInput(), get usage() { return FULL; } }), "boundary")).toMatch(/accessor/);
    expect(refused(() => createUsageReceipt(receiptInput({ model: new (class { provider = "x"; model = "y"; })() })), "boundary")).toMatch(/class_instance/);
    expect(refused(() => createUsageReceipt(receiptInput({ model: { ...MODEL, api_key: "sk-1" } })), "boundary")).toMatch(/authority_field/);
  });
});

describe("createObservedModelUsageReceipt", () => {
  const response = (extra: Record<string, unknown> = {}) => ({
    status: "completed",
    model: { profile: MODEL },
    usage: FULL,
    request_id: "req_abc",
    content: [{ type: "text", text: "the answer" }],
    warnings: [{ code: "truncated" }],
    errors: [],
    finish_reason: "stop",
    native: { "com.example.provider": { system_fingerprint: "fp_1" } },
    ...extra,
  });
  const invocation = { invocation_id: "inv-9", observed_at: 1_800_000_100 };

  it("keeps identity, usage and request id, and drops content, warnings, errors and native metadata", () => {
    const r = createObservedModelUsageReceipt(response(), invocation);
    expect(r).toEqual({ invocation_id: "inv-9", observed_at: 1_800_000_100, model: MODEL, provider_request_id: "req_abc", usage: FULL, attribution: { kind: "attributed" }, pricing: { kind: "unavailable", reason: "not-provided" } });
    expect(JSON.stringify(r)).not.toMatch(/answer|truncated|fp_1|stop/);
  });

  it("a response without usage is not-reported, never zeros", () => {
    const r = createObservedModelUsageReceipt(response({ usage: undefined }), invocation);
    expect(r.attribution).toEqual({ kind: "unavailable", reason: "not-reported" });
    expect(r.usage).toBeUndefined();
    expect(createObservedModelUsageReceipt(response({ usage: null }), invocation).attribution.kind).toBe("unavailable");
    expect(createObservedModelUsageReceipt(response({ usage: { input_tokens: null } }), invocation).attribution.kind).toBe("unavailable");
  });

  it("metrics reported as null or absent make it partial, naming them", () => {
    const r = createObservedModelUsageReceipt(response({ usage: { input_tokens: 10, output_tokens: 4, total_tokens: null } }), invocation);
    expect(r.attribution).toEqual({ kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"] });
    expect(r.usage).toEqual({ input_tokens: 10, output_tokens: 4 });
  });

  it("refuses a response that did not complete, a native object, or credentials in its metadata", () => {
    expect(refused(() => createObservedModelUsageReceipt(response({ status: "failed" }), invocation))).toMatch(/completed/);
    expect(refused(() => createObservedModelUsageReceipt(new (class { status = "completed"; })(), invocation), "boundary")).toMatch(/class_instance/);
    expect(refused(() => createObservedModelUsageReceipt(response({ native: { headers: { authorization: "Bearer x" } } }), invocation), "boundary")).toMatch(/authority_field/);
    expect(refused(() => createObservedModelUsageReceipt(response({ raw: {} }), invocation))).toMatch(/unknown field "raw"/);
  });

  it("checks the parts it drops at the boundary too: an authority field name in the content refuses the response (docs/usage-evidence.md)", () => {
    const structured = response({ content: [{ type: "json", value: { approved: true } }] });
    expect(refused(() => createObservedModelUsageReceipt(structured, invocation), "boundary")).toMatch(/authority_field.*content\.0\.value\.approved/);
  });
});

describe("decimal amounts", () => {
  it("equality is exact on strings", () => {
    expect(decimalEquals("1.50", "1.5")).toBe(true);
    expect(decimalEquals("2", "2.000")).toBe(true);
    expect(decimalEquals("0", "0.0")).toBe(true);
    expect(decimalEquals("0.1", "0.10000000000000000001")).toBe(false);
    expect(decimalEquals("10", "1")).toBe(false);
    expect(decimalEquals("123456789012345678901234567890.1", "123456789012345678901234567890.10")).toBe(true);
    expect(normalizeDecimal("3.1400")).toBe("3.14");
  });

  it("no floats, no exponents, no signs, no leading zeros", () => {
    for (const bad of ["1e3", "1E-2", "-1", "+1", "01.5", ".5", "1.", "1,5", " 1", "Infinity", "NaN", ""]) expect(isDecimal(bad)).toBe(false);
    expect(isDecimal(1.5)).toBe(false);
    expect(isDecimal("0.0001")).toBe(true);
    expect(() => decimalEquals("1e3", "1000")).toThrow(RangeError);
  });

  it("valuation arithmetic is exact (0.1 + 0.2 is 0.3)", () => {
    expect(sumOfProducts([{ count: 100_000, rate: "1" }, { count: 200_000, rate: "1" }], 6)).toBe("0.3");
    expect(sumOfProducts([{ count: 1, rate: "0.000001" }], 6)).toBe("0.000000000001");
    expect(sumOfProducts([{ count: 0, rate: "5" }], 6)).toBe("0");
  });
});

describe("cost estimates", () => {
  const priceRef = { id: "openai-list-prices", version: "2025-06" };
  const valuation = (receipt = attributed(), extra: Record<string, unknown> = {}) => ({
    kind: "estimated",
    receipt,
    units: { input_tokens: 1200, output_tokens: 300 },
    price_source: priceRef,
    effective_at: 1_700_000_000,
    currency: "USD",
    amount: "0.0048",
    ...extra,
  });

  it("estimated: valued units equal the receipt's observations", () => {
    const e = createCostEstimate(valuation());
    expect(e.kind).toBe("estimated");
    expect(Object.isFrozen(e) && Object.isFrozen(e.receipt)).toBe(true);
    expect(refused(() => createCostEstimate(valuation(attributed(), { units: { input_tokens: 1201 } })))).toMatch(/receipt observed 1200/);
  });

  it("estimated over a partially attributed receipt is refused as overstated coverage", () => {
    expect(refused(() => createCostEstimate(valuation(partial())))).toMatch(/overstated coverage/);
  });

  it("partial names exactly what the receipt lacks and values only what it observed", () => {
    const e = createCostEstimate(valuation(partial(), { kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"] }));
    expect(e.kind).toBe("partial");
    expect(refused(() => createCostEstimate(valuation(partial(), { kind: "partial", missing: ["total_tokens"] })))).toMatch(/exactly/);
    expect(refused(() => createCostEstimate(valuation(partial(), { kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"], units: { cached_input_tokens: 200 } })))).toMatch(/did not observe/);
    expect(refused(() => createCostEstimate(valuation(attributed(), { kind: "partial", missing: [] })))).toMatch(/fully attributed/);
  });

  it("each unavailable reason, carrying no money, currency or price source", () => {
    for (const reason of ["no-pricing", "stale-pricing", "unverified-source"]) {
      expect(createCostEstimate({ kind: "unavailable", receipt: attributed(), reason })).toEqual({ kind: "unavailable", receipt: attributed(), reason });
    }
    expect(createCostEstimate({ kind: "unavailable", receipt: partial(), reason: "incomplete-usage" }).kind).toBe("unavailable");
    for (const money of [{ amount: "0" }, { currency: "USD" }, { price_source: priceRef }, { effective_at: 1 }]) {
      expect(refused(() => createCostEstimate({ kind: "unavailable", receipt: attributed(), reason: "no-pricing", ...money }))).toMatch(/no money/);
    }
  });

  it("a receipt without usage gives only incomplete-usage, with no valued units", () => {
    expect(createCostEstimate({ kind: "unavailable", receipt: unreported(), reason: "incomplete-usage" }).kind).toBe("unavailable");
    expect(refused(() => createCostEstimate({ kind: "unavailable", receipt: unreported(), reason: "no-pricing" }))).toMatch(/incomplete-usage/);
    expect(refused(() => createCostEstimate({ kind: "unavailable", receipt: unreported(), reason: "incomplete-usage", units: { input_tokens: 0 } }))).toMatch(/no units/);
    expect(refused(() => createCostEstimate(valuation(unreported(), { units: { input_tokens: 0 } })))).toMatch(/incomplete-usage/);
    expect(refused(() => createCostEstimate({ kind: "unavailable", receipt: attributed(), reason: "incomplete-usage" }))).toMatch(/complete/);
  });

  it("the amount is a plain decimal string in an ISO 4217 currency, valued by a source in effect", () => {
    expect(refused(() => createCostEstimate(valuation(attributed(), { amount: 0.0048 })))).toMatch(/decimal/);
    expect(refused(() => createCostEstimate(valuation(attributed(), { amount: "4.8e-3" })))).toMatch(/decimal/);
    expect(refused(() => createCostEstimate(valuation(attributed(), { currency: "usd" })))).toMatch(/ISO 4217/);
    expect(refused(() => createCostEstimate(valuation(attributed(), { effective_at: 1_900_000_000 })))).toMatch(/after the usage/);
    expect(refused(() => createCostEstimate(valuation(attributed(), { invoice_id: "x" })))).toMatch(/unknown field/);
  });

  it("a receipt that names its price source is valued against that source only", () => {
    const named = createUsageReceipt(receiptInput({ pricing: { kind: "price-source", price_source: { id: "other", version: "1" } } }));
    expect(refused(() => createCostEstimate(valuation(named)))).toMatch(/valued against other@1/);
  });
});

describe("deriveCostEstimate", () => {
  const source = (extra: Record<string, unknown> = {}) => createPriceSource({ ...SOURCE, ...extra });

  it("values the observed units exactly", () => {
    const e = deriveCostEstimate(attributed(), source());
    // 1200 × 2.00 + 300 × 8 + 200 × 0.50, per million tokens
    expect(e).toMatchObject({ kind: "estimated", units: { input_tokens: 1200, output_tokens: 300, cached_input_tokens: 200 }, currency: "USD", amount: "0.0049", price_source: { id: SOURCE.id, version: SOURCE.version } });
  });

  it("a partial receipt gives a partial estimate naming what it lacks", () => {
    expect(deriveCostEstimate(partial(), source())).toMatchObject({ kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"], amount: "0.0048" });
  });

  it("derives each unavailable reason", () => {
    expect(deriveCostEstimate(unreported(), source())).toMatchObject({ kind: "unavailable", reason: "incomplete-usage" });
    expect(deriveCostEstimate(attributed(), null)).toMatchObject({ kind: "unavailable", reason: "no-pricing" });
    expect(deriveCostEstimate(attributed(), source({ verified: false }))).toMatchObject({ kind: "unavailable", reason: "unverified-source" });
    expect(deriveCostEstimate(attributed(), source({ valid_until: 1_750_000_000 }))).toMatchObject({ kind: "unavailable", reason: "stale-pricing" });
    expect(deriveCostEstimate(attributed(), source({ effective_at: 1_850_000_000 }))).toMatchObject({ kind: "unavailable", reason: "stale-pricing" });
    const onlyReasoning = source({ per_million_tokens: { reasoning_tokens: "8" } });
    expect(deriveCostEstimate(partial(), onlyReasoning)).toMatchObject({ kind: "unavailable", reason: "incomplete-usage" });
    for (const e of [deriveCostEstimate(unreported(), null), deriveCostEstimate(attributed(), null)]) expect(JSON.stringify(e)).not.toMatch(/amount|currency|price_source/);
  });

  it("refuses malformed assumptions whatever the outcome, even when the estimate is unavailable and carries none", () => {
    for (const bad of [[{}], [1], ["x".repeat(300)], Array(17).fill("a"), "list prices"]) {
      for (const src of [source(), null, source({ verified: false })]) {
        expect(refused(() => deriveCostEstimate(attributed(), src, { assumptions: bad as string[] }))).toMatch(/assumptions/);
      }
      expect(refused(() => deriveCostEstimate(unreported(), source(), { assumptions: bad as string[] }))).toMatch(/assumptions/);
    }
    expect(deriveCostEstimate(attributed(), null, { assumptions: ["list prices"] })).toEqual({ kind: "unavailable", receipt: attributed(), reason: "no-pricing" });
    expect(deriveCostEstimate(attributed(), source(), { assumptions: [] })).not.toHaveProperty("assumptions");
  });

  it("refuses a price source with a float rate or pricing nothing", () => {
    expect(refused(() => createPriceSource({ ...SOURCE, per_million_tokens: { input_tokens: 2 } }))).toMatch(/decimal/);
    expect(refused(() => createPriceSource({ ...SOURCE, per_million_tokens: {} }))).toMatch(/prices no metric/);
  });
});

describe("reconciliation with the provider's record", () => {
  const record = (extra: Record<string, unknown> = {}) =>
    createProviderCostRecord({ provider: "openai", source: "openai-usage-api", source_version: "v1", evidence_ref: { id: "usage-export-2025-06-01", digest: `sha256:${"a".repeat(64)}` }, provider_request_id: "req_abc", currency: "USD", amount: "0.00490", ...extra });
  const estimate = () => deriveCostEstimate(attributed(), createPriceSource(SOURCE));

  it("reconciled when currency and amount agree, by decimal equality (\"0.0049\" = \"0.00490\")", () => {
    const r = reconcileCost(estimate(), record());
    expect(r.disposition).toEqual({ kind: "reconciled" });
    expect(r.provider_record).toBeDefined();
    expect(Object.isFrozen(r)).toBe(true);
  });

  it("divergent with its reason", () => {
    expect(reconcileCost(estimate(), record({ amount: "0.005" })).disposition).toEqual({ kind: "divergent", reason: "amount-mismatch" });
    expect(reconcileCost(estimate(), record({ currency: "EUR" })).disposition).toEqual({ kind: "divergent", reason: "currency-mismatch" });
  });

  it("unreconcilable when the estimate is unavailable", () => {
    expect(reconcileCost(deriveCostEstimate(attributed(), null), record()).disposition).toEqual({ kind: "unreconcilable", reason: "estimate-unavailable" });
  });

  it("unavailable without a record: no-provider-record or pending", () => {
    expect(reconcileCost(estimate(), null)).toEqual({ estimate: estimate(), disposition: { kind: "unavailable", reason: "no-provider-record" } });
    expect(reconcileCost(estimate(), null, { pending: true }).disposition).toEqual({ kind: "unavailable", reason: "pending" });
  });

  it("the record is present exactly when the disposition needs one", () => {
    expect(refused(() => createReconciledCost({ estimate: estimate(), disposition: { kind: "unavailable", reason: "pending" }, provider_record: record() }))).toMatch(/no provider record/);
    expect(refused(() => createReconciledCost({ estimate: estimate(), disposition: { kind: "reconciled" } }))).toMatch(/needs the provider record/);
  });

  it("a disposition is derived, never asserted", () => {
    expect(refused(() => createReconciledCost({ estimate: estimate(), disposition: { kind: "reconciled" }, provider_record: record({ amount: "1" }) }))).toMatch(/asserted reconciled but .* give divergent \(amount-mismatch\)/);
    expect(refused(() => createReconciledCost({ estimate: estimate(), disposition: { kind: "divergent", reason: "currency-mismatch" }, provider_record: record({ amount: "1" }) }))).toMatch(/amount-mismatch/);
  });

  it("a provider or request id contradicting the receipt is an identity error, not a divergence", () => {
    expect(refused(() => reconcileCost(estimate(), record({ provider: "anthropic" })), "identity")).toMatch(/ran on openai/);
    expect(refused(() => reconcileCost(estimate(), record({ provider_request_id: "req_other" })), "identity")).toMatch(/request id/);
    expect(refused(() => deriveReconciliationDisposition(deriveCostEstimate(attributed(), null), record({ provider: "anthropic" })), "identity")).toBeTruthy();
    expect(reconcileCost(estimate(), record({ provider_request_id: undefined })).disposition.kind).toBe("reconciled");
  });

  it("a provider record cites evidence by digest, never by locator, and its amount is a decimal string", () => {
    expect(refused(() => record({ evidence_ref: { id: "https://bucket/x", digest: `sha256:${"a".repeat(64)}` } }))).toMatch(/evidence_ref/);
    expect(refused(() => record({ evidence_ref: { id: "x", digest: "md5:abc" } }))).toMatch(/sha256/);
    expect(refused(() => record({ amount: 0.0049 }))).toMatch(/decimal/);
  });
});

describe("cache attribution", () => {
  const reuse = (avoided: unknown, receipt = attributed()) => ({ receipt, disposition: { kind: "reuse", avoided } });

  it("reuse against a prior observation or a declared baseline records avoided tokens", () => {
    const prior = createCacheAttributionRecord(reuse({ kind: "prior-observation", prior_invocation_id: "inv-0", baseline: { input_tokens: 2000 }, avoided: { input_tokens: 800 } }));
    expect(prior.disposition).toMatchObject({ kind: "reuse", avoided: { kind: "prior-observation", avoided: { input_tokens: 800 } } });
    const declared = createCacheAttributionRecord(reuse({ kind: "declared-baseline", baseline_id: "prompt-v3", baseline: { input_tokens: 1200, total_tokens: 1600 }, avoided: { total_tokens: 100 } }));
    expect(declared.disposition.kind).toBe("reuse");
    expect(Object.isFrozen(declared.disposition)).toBe(true);
  });

  it("avoided usage unavailable: no baseline, or usage not reported", () => {
    expect(createCacheAttributionRecord(reuse({ kind: "unavailable", reason: "no-baseline" })).disposition.kind).toBe("reuse");
    expect(createCacheAttributionRecord(reuse({ kind: "unavailable", reason: "usage-not-reported" }, unreported())).disposition.kind).toBe("reuse");
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "declared-baseline", baseline_id: "b", baseline: { input_tokens: 10 }, avoided: { input_tokens: 10 } }, unreported())))).toMatch(/usage-not-reported/);
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "unavailable", reason: "usage-not-reported" })))).toMatch(/does report/);
  });

  it("a receipt without usage can only say usage-not-reported, never no-baseline", () => {
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "unavailable", reason: "no-baseline" }, unreported())))).toMatch(/usage-not-reported/);
  });

  it("miss and not-applicable carry nothing else", () => {
    expect(createCacheAttributionRecord({ receipt: attributed(), disposition: { kind: "miss" } }).disposition).toEqual({ kind: "miss" });
    expect(createCacheAttributionRecord({ receipt: attributed(), disposition: { kind: "not-applicable" } }).disposition).toEqual({ kind: "not-applicable" });
    expect(refused(() => createCacheAttributionRecord({ receipt: attributed(), disposition: { kind: "miss", avoided: { kind: "unavailable", reason: "no-baseline" } } }))).toMatch(/unknown field/);
  });

  it("avoided is the baseline minus the observation, never negative, never money", () => {
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "prior-observation", prior_invocation_id: "inv-0", baseline: { input_tokens: 2000 }, avoided: { input_tokens: 900 } })))).toMatch(/baseline minus/);
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "prior-observation", prior_invocation_id: "inv-0", baseline: { input_tokens: 1000 }, avoided: { input_tokens: -200 } })))).toMatch(/token count/);
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "prior-observation", prior_invocation_id: "inv-1", baseline: { input_tokens: 2000 }, avoided: { input_tokens: 800 } })))).toMatch(/another invocation/);
    expect(refused(() => createCacheAttributionRecord(reuse({ kind: "declared-baseline", baseline_id: "b", baseline: { input_tokens: 2000 }, avoided: { input_tokens: 800 }, amount: "0.01", currency: "USD" })))).toMatch(/unknown field/);
    expect(refused(() => createCacheAttributionRecord({ receipt: attributed(), disposition: { kind: "reuse", avoided: { kind: "unavailable", reason: "no-baseline" }, credit: "0.01" } }))).toMatch(/unknown field "credit"/);
  });
});

describe("budget decision evidence", () => {
  const decision = (extra: Record<string, unknown> = {}) => ({ invocation_id: "inv-1", decision: "allow", phase: "before-invocation", limit: { name: "daily-tokens", metric: "total_tokens", threshold: "1000000" }, decided_at: 1_800_000_000, ...extra });

  it("allow, warn, stop and overrun, riding on the receipt of the same invocation", () => {
    for (const [d, phase] of [["allow", "before-invocation"], ["warn", "during-invocation"], ["stop", "during-invocation"], ["overrun", "after-invocation"]]) {
      expect(createBudgetDecisionEvidence(decision({ decision: d, phase }), { receipt: attributed() }).decision).toBe(d);
    }
    expect(createBudgetDecisionEvidence(decision({ limit: { name: "monthly", metric: "cost", threshold: "250.00", currency: "EUR" } })).limit.currency).toBe("EUR");
  });

  it("its invocation is the receipt's, exactly", () => {
    expect(refused(() => createBudgetDecisionEvidence(decision({ invocation_id: "inv-2" }), { receipt: attributed() }), "identity")).toMatch(/receipt's invocation/);
  });

  it("refuses an overrun before anything ran, a decision it does not know, and usage of its own", () => {
    expect(refused(() => createBudgetDecisionEvidence(decision({ decision: "overrun" })))).toMatch(/overrun/);
    expect(refused(() => createBudgetDecisionEvidence(decision({ decision: "throttle" })))).toMatch(/decision/);
    expect(refused(() => createBudgetDecisionEvidence(decision({ usage: FULL })))).toMatch(/unknown field "usage"/);
  });

  it("a limit names its metric; a cost limit its currency; a token threshold is whole", () => {
    expect(refused(() => createBudgetDecisionEvidence(decision({ limit: { name: "m", metric: "cost", threshold: "10" } })))).toMatch(/currency/);
    expect(refused(() => createBudgetDecisionEvidence(decision({ limit: { name: "m", metric: "total_tokens", threshold: "10.5" } })))).toMatch(/whole number/);
    expect(refused(() => createBudgetDecisionEvidence(decision({ limit: { name: "m", metric: "total_tokens", threshold: "10", currency: "USD" } })))).toMatch(/currency/);
  });
});

describe("times are Unix seconds", () => {
  it("every instant of the usage records is below 10^11: a time in milliseconds is refused wherever it appears", () => {
    expect(refused(() => createUsageReceipt(receiptInput({ observed_at: 4_102_444_800_000 })))).toMatch(/milliseconds \(at observed_at\)/);
    expect(refused(() => createPriceSource({ ...SOURCE, valid_until: 1_800_000_000_000 }))).toMatch(/at valid_until/);
    const decision = { invocation_id: "inv-1", decision: "warn", phase: "after-invocation", limit: { name: "d", metric: "total_tokens", threshold: "1" }, decided_at: 1e11 };
    expect(refused(() => createBudgetDecisionEvidence(decision))).toMatch(/at decided_at/);
    expect(createUsageReceipt(receiptInput({ observed_at: 1e11 - 1 })).observed_at).toBe(1e11 - 1);
  });
});
