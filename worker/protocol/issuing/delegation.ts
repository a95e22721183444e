/**
 * Delegated intake (CCS §11, CV-008): a Command carrying `delegation_chain` (the parent receipt,
 * or an Evidence Envelope around it) has the parent verified first, with the same code that
 * verifies receipts and envelopes, in audit mode. Audit mode because intake is not the parent's
 * consumer: claiming the parent's nonce here would make its own relying party see a replay, and
 * a nonce that relying party already consumed (the usual case: the parent's action ran, then it
 * delegated) is expected, so a replay answer from the ledger is not held against the parent. A
 * revoked key still is. The child's receipt then commits to the parent through the link below,
 * carried in its runtime_context and bound by runtime_context_hash.
 */
import type { FreshnessPolicy } from "../checks/freshness.js";
import { MAX_HOP_COUNT } from "../envelope.js";
import { verifyEnvelope } from "../envelope-verify.js";
import { isJsonObject } from "../strict-json.js";
import { verifyReceipt, type Decision, type VerifyDeps } from "../verify.js";

export interface DelegationLink {
  previous_receipt_hash: string;
  parent_trace_id: string;
  hop_count: number;
}

export type DelegationCheck =
  | { kind: "linked"; link: DelegationLink }
  | { kind: "refused"; codes: string[]; detail: string }
  | { kind: "malformed"; detail: string };

export interface DelegationCall {
  /** Audiences this deployment serves: the parent must have been issued for one of them. */
  audiences: readonly string[];
  now: number;
  policy: FreshnessPolicy;
  orgId: string | null;
}

const MALFORMED = new Set(["MALFORMED_RECEIPT", "ENVELOPE_MALFORMED"]);

export async function verifyDelegation(value: Record<string, unknown>, call: DelegationCall, deps: VerifyDeps): Promise<DelegationCheck> {
  const envelope = Object.hasOwn(value, "envelope_version");
  const receipt = envelope ? value.original_receipt : value;
  const claimed = isJsonObject(receipt) && typeof receipt.audience === "string" ? receipt.audience : "";
  const audience = call.audiences.includes(claimed) ? claimed : call.audiences[0];
  const auditDeps: VerifyDeps = {
    ...deps,
    ledger: (issuer, nonce, shards) => {
      const ledger = deps.ledger(issuer, nonce, shards);
      return { claim: () => Promise.reject(new Error("delegation never claims a nonce")), inspect: async (q) => ({ ...(await ledger.inspect(q)), replay: null }) };
    },
  };
  const opts = { audience, mode: "audit" as const, now: call.now, policy: call.policy };
  let decision: Decision;
  let parentHop = 0;
  if (envelope) {
    const judged = await verifyEnvelope(value, { ...opts, orgId: call.orgId }, auditDeps);
    decision = judged.decision;
    parentHop = judged.envelope?.hop_count ?? 0;
  } else decision = await verifyReceipt(value, opts, auditDeps);
  const critical = decision.failures.filter((f) => f.severity === "CRITICAL");
  if (critical.some((f) => MALFORMED.has(f.code))) return { kind: "malformed", detail: `delegation_chain: ${critical[0].detail}` };
  if (critical.length > 0) return { kind: "refused", codes: critical.map((f) => f.code), detail: critical.map((f) => `${f.code}: ${f.detail}`).join("; ") };
  const hop = parentHop + 1;
  if (hop > MAX_HOP_COUNT) return { kind: "refused", codes: ["HOP_LIMIT_EXCEEDED"], detail: `HOP_LIMIT_EXCEEDED: hop ${hop} exceeds ${MAX_HOP_COUNT}` };
  const parent = (envelope ? value.original_receipt : value) as { trace_id: string };
  return { kind: "linked", link: { previous_receipt_hash: decision.receipt_hash!, parent_trace_id: parent.trace_id, hop_count: hop } };
}
