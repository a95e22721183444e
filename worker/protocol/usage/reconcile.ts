/**
 * Reconciliation of a cost estimate with what the provider authoritatively recorded. The
 * disposition is derived, never taken on trust: a record presented with a disposition that the
 * derivation does not give is refused. A provider record is present exactly when the disposition
 * compares against one (reconciled, divergent, unreconcilable) and absent when it is unavailable.
 * A record naming another provider, or another request id than the receipt observed, is not a
 * divergence but an identity error: it is about another call.
 */
import type { JsonValue } from "../boundary.js";
import { SHA256_REF } from "../encoding.js";
import { jcs } from "../digest.js";
import { costEstimateAt, type CostEstimate } from "./cost.js";
import { decimalEquals, isDecimal, MAX_DECIMAL_LENGTH, normalizeDecimal } from "./decimal.js";
import { closed, compact, currency, EvidenceError, freeze, identifier, instant, invalid, label, oneOf, snapshot } from "./shape.js";

/** Identifies evidence held behind authorised storage by integrity, never by locator. */
export interface EvidenceRef {
  readonly id: string;
  readonly digest: string;
}

/** What the provider recorded for one call: who recorded it, from which versioned source, citing which evidence. */
export interface ProviderCostRecord {
  readonly provider: string;
  readonly source: string;
  readonly source_version: string;
  readonly evidence_ref: EvidenceRef;
  readonly provider_request_id?: string;
  readonly currency: string;
  readonly amount: string;
  /** Unix seconds at which the provider recorded the cost. */
  readonly recorded_at?: number;
}

export type ReconciliationDisposition =
  | { readonly kind: "reconciled" }
  | { readonly kind: "divergent"; readonly reason: "amount-mismatch" | "currency-mismatch" }
  | { readonly kind: "unreconcilable"; readonly reason: "estimate-unavailable" }
  | { readonly kind: "unavailable"; readonly reason: "no-provider-record" | "pending" };

export const RECONCILIATION_KINDS = ["reconciled", "divergent", "unreconcilable", "unavailable"] as const;

export interface ReconciledCost {
  readonly estimate: CostEstimate;
  readonly provider_record?: ProviderCostRecord;
  readonly disposition: ReconciliationDisposition;
}

export function providerCostRecordAt(value: JsonValue | undefined, path: (string | number)[]): ProviderCostRecord {
  const r = closed(value, path, ["provider", "source", "source_version", "evidence_ref", "currency", "amount"], ["provider_request_id", "recorded_at"]);
  const ref = closed(r.evidence_ref, [...path, "evidence_ref"], ["id", "digest"]);
  if (typeof ref.digest !== "string" || !SHA256_REF.test(ref.digest)) invalid([...path, "evidence_ref", "digest"], "must be sha256: and 64 lowercase hex");
  if (!isDecimal(r.amount)) invalid([...path, "amount"], `must be a plain decimal string of at most ${MAX_DECIMAL_LENGTH} characters (no sign, exponent or leading zeros)`);
  return compact({
    provider: identifier(r.provider, [...path, "provider"]),
    source: identifier(r.source, [...path, "source"]),
    source_version: label(r.source_version, [...path, "source_version"]),
    evidence_ref: { id: identifier(ref.id, [...path, "evidence_ref", "id"]), digest: ref.digest as string },
    provider_request_id: r.provider_request_id === undefined ? undefined : label(r.provider_request_id, [...path, "provider_request_id"]),
    currency: currency(r.currency, [...path, "currency"]),
    amount: r.amount as string,
    recorded_at: r.recorded_at === undefined ? undefined : instant(r.recorded_at, [...path, "recorded_at"]),
  });
}

export function createProviderCostRecord(input: unknown): ProviderCostRecord {
  return freeze(providerCostRecordAt(snapshot(input), []));
}

/**
 * What makes two provider records the same record of the same call, for refusing one record that
 * would reconcile two invocations: the provider and the call's request id, the record's own or,
 * when it names none, that of the receipt it reconciles (checkProviderIdentity has made sure the
 * two never contradict each other), whatever amount or export cites it; with neither, the whole
 * record in canonical form, its amount normalised (it then identifies its call by nothing else). So leaving the request
 * id out of a record does not make it another record of a call the receipt names.
 */
export function providerRecordKey(record: ProviderCostRecord, receiptRequestId?: string): string {
  const requestId = record.provider_request_id ?? receiptRequestId;
  // The amount is a decimal ("0.0049" and "0.00490" are one amount, as reconciliation compares them), so it is keyed in its canonical form.
  return requestId !== undefined ? jcs({ provider: record.provider, provider_request_id: requestId }) : jcs({ ...record, amount: normalizeDecimal(record.amount) });
}

/** Refuses a provider record that is about another call than the estimate's receipt. */
export function checkProviderIdentity(estimate: CostEstimate, record: ProviderCostRecord): void {
  const { receipt } = estimate;
  if (record.provider !== receipt.model.provider) {
    throw new EvidenceError("identity", ["provider_record", "provider"], `the record is from ${record.provider} but the receipt's call ran on ${receipt.model.provider}`);
  }
  if (record.provider_request_id !== undefined && receipt.provider_request_id !== undefined && record.provider_request_id !== receipt.provider_request_id) {
    throw new EvidenceError("identity", ["provider_record", "provider_request_id"], "the record's provider request id contradicts the receipt's");
  }
}

/** The disposition an estimate and a provider record (or none) give; `pending` says a missing record is still expected. */
export function deriveReconciliationDisposition(estimate: CostEstimate, record: ProviderCostRecord | null, options: { pending?: boolean } = {}): ReconciliationDisposition {
  if (!record) return { kind: "unavailable", reason: options.pending ? "pending" : "no-provider-record" };
  checkProviderIdentity(estimate, record);
  if (estimate.kind === "unavailable") return { kind: "unreconcilable", reason: "estimate-unavailable" };
  if (estimate.currency !== record.currency) return { kind: "divergent", reason: "currency-mismatch" };
  if (!decimalEquals(estimate.amount, record.amount)) return { kind: "divergent", reason: "amount-mismatch" };
  return { kind: "reconciled" };
}

function disposition(value: JsonValue | undefined, path: (string | number)[]): ReconciliationDisposition {
  const kind = oneOf(closed(value, path, ["kind"], ["reason"]).kind, RECONCILIATION_KINDS, [...path, "kind"]);
  if (kind === "reconciled") return (closed(value, path, ["kind"]), { kind });
  const d = closed(value, path, ["kind", "reason"]);
  if (kind === "divergent") return { kind, reason: oneOf(d.reason, ["amount-mismatch", "currency-mismatch"] as const, [...path, "reason"]) };
  if (kind === "unreconcilable") return { kind, reason: oneOf(d.reason, ["estimate-unavailable"] as const, [...path, "reason"]) };
  return { kind, reason: oneOf(d.reason, ["no-provider-record", "pending"] as const, [...path, "reason"]) };
}

/** A frozen ReconciledCost whose disposition is the one derived from its estimate and record, or an EvidenceError. */
export function createReconciledCost(input: unknown): ReconciledCost {
  const r = closed(snapshot(input), [], ["estimate", "disposition"], ["provider_record"]);
  const estimate = costEstimateAt(r.estimate, ["estimate"]);
  const record = r.provider_record === undefined ? null : providerCostRecordAt(r.provider_record, ["provider_record"]);
  const asserted = disposition(r.disposition, ["disposition"]);
  if (asserted.kind === "unavailable" && record) invalid(["provider_record"], "an unavailable reconciliation has no provider record");
  if (asserted.kind !== "unavailable" && !record) invalid(["disposition"], `a ${asserted.kind} disposition needs the provider record it was derived from`);
  const derived = deriveReconciliationDisposition(estimate, record, { pending: asserted.kind === "unavailable" && asserted.reason === "pending" });
  if (derived.kind !== asserted.kind || ("reason" in derived && "reason" in asserted && derived.reason !== asserted.reason)) {
    invalid(["disposition"], `asserted ${describe(asserted)} but the estimate and record give ${describe(derived)}`);
  }
  return freeze(compact({ estimate, provider_record: record ?? undefined, disposition: derived }));
}

const describe = (d: ReconciliationDisposition): string => ("reason" in d ? `${d.kind} (${d.reason})` : d.kind);

/** Derives and builds the reconciliation of `estimate` with `record` (or with none). */
export function reconcileCost(estimate: CostEstimate, record: ProviderCostRecord | null, options: { pending?: boolean } = {}): ReconciledCost {
  const disposition = deriveReconciliationDisposition(estimate, record, options);
  return createReconciledCost({ estimate, disposition, ...(record ? { provider_record: record } : {}) });
}
