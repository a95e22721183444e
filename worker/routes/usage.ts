/**
 * Usage, cost and reconciliation evidence over HTTP. Every record is built by the protocol
 * factories (worker/protocol/usage/), so a route only chooses which record to build and where it
 * is kept: the caller's own UsageLedger. All four routes take a relying-party token; records are
 * the storing party's alone.
 */
import { partyScope } from "../protocol/relying-parties.js";
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { dependencyTimeout, freshnessPolicy, MAX_USAGE_BODY } from "../config.js";
import type { DeriveResult, StoredUsage, StoreResult } from "../../durable-objects/usage-ledger.js";
import { ApiError, readStrictJson, requireObject, strictQuery, withTimeout } from "../http.js";
import { exportBestEffort } from "../observability.js";
import { jcs } from "../protocol/digest.js";
import { projectModelUsage } from "../protocol/observability.js";
import { budgetFlags, createBudgetDecisionEvidence } from "../protocol/usage/budget.js";
import { createCacheAttributionRecord, type CacheAttribution } from "../protocol/usage/cache.js";
import { createCostEstimate, createPriceSource, deriveCostEstimate, type CostEstimate } from "../protocol/usage/cost.js";
import { createObservedModelUsageReceipt, createUsageReceipt, USAGE_METRICS, type UsageReceipt } from "../protocol/usage/receipt.js";
import { createProviderCostRecord, providerRecordKey, reconcileCost } from "../protocol/usage/reconcile.js";
import { EvidenceError, IDENTIFIER } from "../protocol/usage/shape.js";
import { normalizeDecimal } from "../protocol/usage/decimal.js";
import { usageLedger } from "../usage-store.js";
import { partyTenant } from "../journal-store.js";
import { RECORD_ID } from "../protocol/journal/core.js";

/** At most this many budget decisions ride on one receipt. */
export const MAX_BUDGET_DECISIONS = 16;

/** Runs a factory; a refused record is a 400 with the rule it broke, never a 5xx. */
function evidence<T>(build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof EvidenceError) throw new ApiError(400, err.kind === "identity" ? "EVIDENCE_IDENTITY_MISMATCH" : "USAGE_EVIDENCE_INVALID", err.message);
    throw err;
  }
}

/**
 * Checks a body's members against `allowed`, then drops those given as null: every member of
 * these bodies is optional or one of two alternatives, and null is the same as leaving it out
 * (the answers write an absent part as null, so an answer's parts can be sent back). Inside a
 * record, null is never a value: the factories refuse it.
 */
function fields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const key of Object.keys(body)) if (!allowed.includes(key)) throw new ApiError(400, "MALFORMED_REQUEST", `unknown field ${JSON.stringify(key)}`);
  for (const key of Object.keys(body)) if (body[key] === null) delete body[key];
}

function exactlyOne(body: Record<string, unknown>, a: string, b: string): "a" | "b" {
  const hasA = Object.hasOwn(body, a);
  if (hasA === Object.hasOwn(body, b)) throw new ApiError(400, "MALFORMED_REQUEST", `exactly one of ${a} and ${b} is required`);
  return hasA ? "a" : "b";
}

/** GET /v1/usage takes one parameter, once. */
const USAGE_QUERY: ReadonlySet<string> = new Set(["invocation_id"]);

function invocationId(value: unknown): string {
  if (typeof value !== "string" || !IDENTIFIER.test(value)) throw new ApiError(400, "MALFORMED_REQUEST", "invocation_id must be 1-128 of [A-Za-z0-9._:-]");
  return value;
}

function ledger(c: Context<AppEnv>) {
  const stub = usageLedger(c.env, partyScope(c.get("relyingParty")));
  const timeout = dependencyTimeout(c.env);
  const call = <T>(work: Promise<unknown>) => withTimeout(work as Promise<T>, timeout, "usage ledger");
  return {
    store: (...a: Parameters<typeof stub.store>) => call<StoreResult>(stub.store(...a)),
    read: (id: string) => call<StoredUsage | null>(stub.read(id)),
    recordEstimate: (...a: Parameters<typeof stub.recordEstimate>) => call<DeriveResult>(stub.recordEstimate(...a)),
    recordReconciliation: (...a: Parameters<typeof stub.recordReconciliation>) => call<DeriveResult>(stub.recordReconciliation(...a)),
  };
}

/**
 * A stored row as the routes answer it: the records themselves, absent ones null, and
 * `budget_flags`, derived on every answer, for budget decisions that sit oddly beside the receipt.
 */
function view(row: StoredUsage) {
  const parsed = (text: string | null) => (text === null ? null : JSON.parse(text));
  const receipt = JSON.parse(row.receipt);
  const decisions = JSON.parse(row.budget_decisions);
  return {
    invocation_id: row.invocation_id,
    receipt,
    journal_record: row.journal_record,
    cache: parsed(row.cache),
    budget_decisions: decisions,
    budget_flags: budgetFlags(receipt, decisions),
    estimate: parsed(row.estimate),
    reconciliation: parsed(row.reconciliation),
    stored_at: row.stored_at,
    updated_at: row.updated_at,
  };
}

const notStored = (id: string) => new ApiError(404, "NOT_FOUND", `no usage receipt stored for invocation ${id}`);
const changed = (what: string) => new ApiError(409, "USAGE_RECORD_CONFLICT", `${what} changed while this call was being answered; read it again`);

async function storedReceipt(c: Context<AppEnv>, id: string): Promise<{ row: StoredUsage; receipt: UsageReceipt }> {
  const row = await ledger(c).read(id);
  if (!row) throw notStored(id);
  return { row, receipt: createUsageReceipt(JSON.parse(row.receipt)) };
}

/**
 * A `journal_record` in the form of this deployment's record ids (32 hex) names a record of the
 * caller's own journal (/v1/journal): it must exist there, and when its reservation named an
 * `invocation_id` it must be this receipt's. One read of one shard, of the record's reservation
(at most three entries, never the history replayed: a record at the history's size bound took
0.25-0.66 s a call when it was loaded whole); any other identifier names a
 * journal kept elsewhere and is stored as given.
 */
async function checkJournalRecord(c: Context<AppEnv>, recordId: string, invocationId: string): Promise<void> {
  // The reservation only, not the history: what the record says of itself is in its reservation.
  const loaded = await c.get("services").journal(partyTenant(partyScope(c.get("relyingParty")))).reservation(recordId);
  if (loaded.kind === "not-found") throw new ApiError(400, "USAGE_EVIDENCE_INVALID", "journal_record names no record of this relying party's journal");
  if (loaded.kind === "corrupt") {
    console.error(JSON.stringify({ event: "journal_history_invalid", record_id: loaded.record_id, reason: loaded.reason }));
    throw new ApiError(500, "JOURNAL_HISTORY_INVALID", "the journal history of the referenced record does not add up and was refused");
  }
  // A reservation that names an invocation_id names this receipt's only with that very string (12 or {} names none).
  const { attributes } = loaded;
  if (Object.hasOwn(attributes, "invocation_id") && attributes.invocation_id !== invocationId) throw new ApiError(400, "EVIDENCE_IDENTITY_MISMATCH", "journal_record belongs to another invocation");
}

/**
 * A cache reuse measured against a prior observation names the invocation observed: when the
 * caller stored that invocation's receipt here, the baseline is what that receipt observed, metric
 * for metric, and one that contradicts it is refused. A prior invocation not stored here (observed
 * elsewhere, or not yet stored) is taken as given, checked only for its form.
 */
async function checkPriorObservation(c: Context<AppEnv>, cache: CacheAttribution): Promise<void> {
  const { disposition } = cache;
  if (disposition.kind !== "reuse" || disposition.avoided.kind !== "prior-observation") return;
  const { prior_invocation_id: id, baseline } = disposition.avoided;
  const prior = await ledger(c).read(id);
  if (!prior) return;
  const observed = (JSON.parse(prior.receipt) as UsageReceipt).usage;
  for (const metric of USAGE_METRICS) {
    const n = baseline[metric];
    if (n === undefined || observed?.[metric] === n) continue;
    const held = observed?.[metric] === undefined ? `no ${metric}` : `${observed[metric]} ${metric}`;
    throw new ApiError(400, "USAGE_EVIDENCE_INVALID", `cache.avoided.baseline.${metric} is ${n}, but the receipt stored for the prior invocation ${id} observed ${held}: a prior observation's baseline is what was observed`);
  }
}

/** A budget decision's identity: canonical, its threshold a decimal ("1.5" and "1.50" are one limit). */
const decisionKey = (d: { limit: { threshold: string } }): string => jcs({ ...d, limit: { ...d.limit, threshold: normalizeDecimal(d.limit.threshold) } });

/** Whether two lists hold the same budget decisions in the same order, thresholds compared as decimals. */
const sameDecisions = (a: { limit: { threshold: string } }[], b: readonly { limit: { threshold: string } }[]): boolean =>
  a.length === b.length && a.every((d, i) => decisionKey(d) === decisionKey(b[i]));

export const usageRoutes = new Hono<AppEnv>()
  /**
   * Validates and stores one usage receipt — given as `receipt`, or as `observed: {response,
   * invocation_id, observed_at, pricing?}` from which it is built — with what rides on it: a
   * `journal_record` reference, a `cache` disposition, `budget_decisions`.
   */
  .post("/usage/receipts", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_USAGE_BODY), "body");
  fields(body, ["receipt", "observed", "journal_record", "cache", "budget_decisions"]);
  let receipt: UsageReceipt;
  if (exactlyOne(body, "receipt", "observed") === "a") receipt = evidence(() => createUsageReceipt(body.receipt));
  else {
    const observed = requireObject(body.observed, "observed");
    for (const key of Object.keys(observed)) if (!["response", "invocation_id", "observed_at", "pricing"].includes(key)) throw new ApiError(400, "MALFORMED_REQUEST", `unknown field ${JSON.stringify(key)}`);
    const { response, ...invocation } = observed;
    receipt = evidence(() => createObservedModelUsageReceipt(response, invocation));
  }
  // A receipt is stored as observed: never of a time ahead of this service's clock by more than the skew.
  const skew = freshnessPolicy(c.env).skewCap;
  if (receipt.observed_at > c.get("services").now() + skew) {
    throw new ApiError(400, "USAGE_EVIDENCE_INVALID", `observed_at ${receipt.observed_at} lies more than ${skew} s ahead of this service's clock: usage is stored once observed (at observed_at)`);
  }
  if (body.journal_record !== undefined && (typeof body.journal_record !== "string" || !IDENTIFIER.test(body.journal_record))) {
    throw new ApiError(400, "MALFORMED_REQUEST", "journal_record must be 1-128 of [A-Za-z0-9._:-]");
  }
  if (typeof body.journal_record === "string" && RECORD_ID.test(body.journal_record)) await checkJournalRecord(c, body.journal_record, receipt.invocation_id);
  const cache = body.cache === undefined ? null : evidence(() => createCacheAttributionRecord({ receipt, disposition: body.cache }));
  if (cache) await checkPriorObservation(c, cache);
  const decisions = body.budget_decisions ?? [];
  if (!Array.isArray(decisions) || decisions.length > MAX_BUDGET_DECISIONS) throw new ApiError(400, "MALFORMED_REQUEST", `budget_decisions must be an array of at most ${MAX_BUDGET_DECISIONS}`);
  const budget = decisions.map((d) => evidence(() => createBudgetDecisionEvidence(d, { receipt })));
  // One decision is one entry: the same decision twice would count it twice.
  const seen = new Map<string, number>();
  budget.forEach((d, i) => {
    const key = decisionKey(d);
    const first = seen.get(key);
    if (first !== undefined) throw new ApiError(400, "USAGE_EVIDENCE_INVALID", `budget_decisions[${i}] repeats budget_decisions[${first}]: a decision is recorded once`);
    seen.set(key, i);
  });

  const services = c.get("services");
  const store = ledger(c);
  const entry = {
    invocation_id: receipt.invocation_id,
    receipt: jcs(receipt),
    attribution: receipt.attribution.kind,
    journal_record: (body.journal_record as string | undefined) ?? null,
    cache: cache ? jcs(cache.disposition) : null,
    budget_decisions: jcs(budget),
  };
  let result = await store.store(entry, Math.floor(services.now()));
  // The same decisions with a threshold written otherwise ("1.5" for a stored "1.50") are the
  // same decisions, so a retry that writes them so is the same call: the stored row answers it.
  // Nothing else may differ, and the stored texts are kept as they are.
  if (result.kind === "conflict" && result.differs.length === 1 && result.differs[0] === "budget_decisions") {
    const held = await store.read(receipt.invocation_id);
    if (held && sameDecisions(JSON.parse(held.budget_decisions), budget)) result = { kind: "existing", stored: held };
  }
  if (result.kind === "conflict") {
    const id = receipt.invocation_id;
    const detail = result.differs.includes("receipt")
      ? `invocation ${id} already has another usage receipt; a receipt is never rewritten`
      : `invocation ${id} already has this usage receipt, stored with another ${result.differs.join(", ")}; what rides on a stored receipt is never rewritten`;
    throw new ApiError(409, "USAGE_RECORD_CONFLICT", detail);
  }
  const row = result.kind === "existing" ? result.stored : await store.read(receipt.invocation_id);
  if (result.kind === "stored") exportBestEffort(c, services.exporter, projectModelUsage(receipt));
  return c.json({ stored: result.kind === "stored", ...view(row!) }, result.kind === "stored" ? 201 : 200);
})
  /** What the caller stored for one invocation, with the latest estimate and reconciliation. */
  .get("/usage", async (c) => {
  // strictQuery, as the other routes with a query: a parameter with no name (`?=5`), which the
  // router drops, or a query that does not decode is refused, not read past.
  const query = strictQuery(c, USAGE_QUERY);
  if (query.invocation_id === undefined) throw new ApiError(400, "MALFORMED_REQUEST", "exactly one invocation_id is required");
  const id = invocationId(query.invocation_id);
  const row = await ledger(c).read(id);
  if (!row) throw notStored(id);
  return c.json(view(row));
})
  /**
   * Derives a cost estimate of a stored receipt (`invocation_id`; the estimate is then stored as
   * its latest) or of a supplied `receipt` (answered only), against `price_source` (none gives
   * no-pricing) with optional `assumptions`.
   */
  .post("/costs/estimate", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_USAGE_BODY), "body");
  fields(body, ["invocation_id", "receipt", "price_source", "assumptions"]);
  const fromStore = exactlyOne(body, "invocation_id", "receipt") === "a";
  const source = body.price_source === undefined || body.price_source === null ? null : evidence(() => createPriceSource(body.price_source));
  if (body.assumptions !== undefined && !Array.isArray(body.assumptions)) throw new ApiError(400, "MALFORMED_REQUEST", "assumptions must be an array of strings");
  const options = body.assumptions === undefined ? {} : { assumptions: body.assumptions as string[] };
  if (!fromStore) {
    const receipt = evidence(() => createUsageReceipt(body.receipt));
    return c.json({ estimate: evidence(() => deriveCostEstimate(receipt, source, options)), stored: false });
  }
  const id = invocationId(body.invocation_id);
  const { row, receipt } = await storedReceipt(c, id);
  const estimate = evidence(() => deriveCostEstimate(receipt, source, options));
  const result = await ledger(c).recordEstimate(id, row.receipt, jcs(estimate), estimate.kind, Math.floor(c.get("services").now()));
  if (result.kind === "not-found") throw notStored(id);
  if (result.kind === "conflict") throw changed("the stored receipt");
  return c.json({ estimate, stored: true });
})
  /**
   * Reconciles an estimate — the latest stored for `invocation_id` (the reconciliation is then
   * stored with it) or a supplied `estimate` (answered only) — with `provider_record`, or with none
   * (`pending: true` when the provider's record is still expected).
   */
  .post("/costs/reconcile", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_USAGE_BODY), "body");
  fields(body, ["invocation_id", "estimate", "provider_record", "pending"]);
  const fromStore = exactlyOne(body, "invocation_id", "estimate") === "a";
  if (body.pending !== undefined && typeof body.pending !== "boolean") throw new ApiError(400, "MALFORMED_REQUEST", "pending must be a boolean");
  if (body.pending === true && body.provider_record !== undefined) throw new ApiError(400, "MALFORMED_REQUEST", "pending means the provider record is not there yet; send one or the other");
  const record = body.provider_record === undefined ? null : evidence(() => createProviderCostRecord(body.provider_record));
  const options = { pending: body.pending === true };
  if (!fromStore) {
    const estimate = evidence(() => createCostEstimate(body.estimate));
    return c.json({ reconciliation: evidence(() => reconcileCost(estimate, record, options)), stored: false });
  }
  const id = invocationId(body.invocation_id);
  const { row } = await storedReceipt(c, id);
  if (row.estimate === null) throw new ApiError(404, "NOT_FOUND", `invocation ${id} has no stored estimate; POST /v1/costs/estimate first`);
  const estimate: CostEstimate = createCostEstimate(JSON.parse(row.estimate));
  const reconciliation = evidence(() => reconcileCost(estimate, record, options));
  const key = reconciliation.provider_record ? providerRecordKey(reconciliation.provider_record, estimate.receipt.provider_request_id) : null;
  const result = await ledger(c).recordReconciliation(id, row.estimate, jcs(reconciliation), reconciliation.disposition.kind, key, Math.floor(c.get("services").now()));
  if (result.kind === "not-found") throw notStored(id);
  if (result.kind === "conflict") throw changed("the stored estimate");
  if (result.kind === "claimed") {
    throw new ApiError(409, "PROVIDER_RECORD_IN_USE", `this provider record already reconciles invocation ${result.by}: one provider record is about one call, and is never counted for two invocations`);
  }
  return c.json({ reconciliation, stored: true });
});
