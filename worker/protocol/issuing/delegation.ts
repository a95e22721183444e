/**
 * Delegated intake (CCS §11, CV-008): a Command carrying `delegation_chain` (the parent receipt,
 * or an Evidence Envelope around it) has the parent verified first, with the same code that
 * verifies receipts and envelopes, in audit mode. Audit mode because intake is not the parent's
 * consumer: claiming the parent's nonce here would make its own relying party see a replay, and
 * a nonce that relying party already consumed (the usual case: the parent's action ran, then it
 * delegated) is expected, so a replay answer from the ledger is not held against the parent. A
 * revoked key still is. The child's receipt then commits to the parent through the link below,
 * carried in its runtime_context and bound by runtime_context_hash.
 *
 * The child's hop is read from what the parent signed, never from what the caller says: the
 * parent's own `runtime_context.delegation.hop_count` + 1, or 1 when the parent binds no
 * delegation. The parent's runtime context is known only by its hash, so it is looked up (this
 * deployment's journal keeps the context of every admission it signed) and counts only when it
 * hashes to the parent's `runtime_context_hash`; a parent that binds a context this deployment
 * cannot read is refused (its hop is unknown). An envelope's `hop_count` is not signed and is not
 * read for the hop. A parent that is not an allow authorised nothing, so it cannot be delegated
 * from either. A Level 0 receipt (bare or in an envelope) is no parent at all: its HMAC proves
 * nothing across a delegation (CCS §10), so it is an intake error, as a malformed one is, not a deny.
 *
 * A linked child also carries the keys its authority rests on (CCS §14): the fingerprint of the
 * pinned key that signed its parent, then the keys the parent's own admission rested on when this
 * deployment admitted the parent (read from the same journal entry its hop is read from). A
 * revocation of any of them marks the child as a revocation of its own signing key would.
 */
import { grantedSkew, type FreshnessPolicy } from "../checks/freshness.js";
import type { Receipt } from "../receipt.js";
import { delegationOf, MAX_CHAIN_HOPS } from "../chain.js";
import { prefixedDigest } from "../digest.js";
import { verifyEnvelope } from "../envelope-verify.js";
import { isLevel0Shape, level0Refused } from "../conformance/level0.js";
import { isJsonObject } from "../strict-json.js";
import { verifyReceipt, type Decision, type VerifyDeps } from "../verify.js";

export interface DelegationLink {
  previous_receipt_hash: string;
  parent_trace_id: string;
  hop_count: number;
}

/** An admission's signed runtime context and the keys its delegation rested on (none when it was not delegated). */
export interface SignedContext {
  text: string;
  delegatedUnder: string[];
}

export type DelegationCheck =
  | {
      kind: "linked";
      link: DelegationLink;
      /** The last instant the parent verifies (its `expires_at` plus the skew granted it): no evidence can be judged with it after. */
      validUntil: number;
      /**
       * The keys (fingerprints) the child's authority rests on, nearest first: the one that signed
       * its parent, then those its parent's admission rested on (when this deployment admitted it).
       */
      delegatedUnder: string[];
    }
  | { kind: "refused"; codes: string[]; detail: string }
  | { kind: "malformed"; detail: string }
  /** A Level 0 receipt, bare or in an envelope: of a level never taken as a parent (CCS §10), an intake error as a malformed one is. */
  | { kind: "level0"; detail: string };

export interface DelegationCall {
  /** Audiences this deployment serves: the parent must have been issued for one of them. */
  audiences: readonly string[];
  now: number;
  policy: FreshnessPolicy;
  orgId: string | null;
  /**
   * The runtime contexts (canonical JSON text) this deployment signed under a trace_id, newest
   * first, each with the keys that admission's delegation rested on: where a parent's signed
   * delegation is read from. None when it issued nothing there.
   */
  signedContexts(traceId: string): Promise<SignedContext[]>;
}

/** The hop a child of this parent is issued at, or why it cannot be read. */
async function childHop(parent: { trace_id: string; runtime_context_hash?: unknown }, call: DelegationCall): Promise<{ hop: number; upstream: string[] } | { code: string; detail: string }> {
  const bound = typeof parent.runtime_context_hash === "string" ? parent.runtime_context_hash : "";
  // A parent that binds no runtime context carries no delegation: it is hop 0.
  if (bound === "") return { hop: 1, upstream: [] };
  for (const { text, delegatedUnder } of await call.signedContexts(parent.trace_id)) {
    if ((await prefixedDigest(text)) !== bound) continue;
    const delegation = delegationOf(JSON.parse(text));
    if (delegation === null) return { code: "CHAIN_BROKEN", detail: "the parent's signed runtime_context.delegation is not of its form" };
    return { hop: (delegation?.hop_count ?? 0) + 1, upstream: delegatedUnder };
  }
  return { code: "DELEGATION_UNREADABLE", detail: "the parent binds a runtime context this deployment did not sign, so its hop (its signed delegation) cannot be read" };
}

const MALFORMED = new Set(["MALFORMED_RECEIPT", "ENVELOPE_MALFORMED"]);

export async function verifyDelegation(value: Record<string, unknown>, call: DelegationCall, deps: VerifyDeps): Promise<DelegationCheck> {
  const envelope = Object.hasOwn(value, "envelope_version");
  const receipt = envelope ? value.original_receipt : value;
  if (isLevel0Shape(receipt)) return { kind: "level0", detail: `delegation_chain: ${level0Refused("a delegation").detail}` };
  const claimed = isJsonObject(receipt) && typeof receipt.audience === "string" ? receipt.audience : "";
  const audience = call.audiences.includes(claimed) ? claimed : call.audiences[0];
  const auditDeps: VerifyDeps = {
    ...deps,
    ledger: (issuer, nonce, shards) => {
      const ledger = deps.ledger(issuer, nonce, shards);
      return { claim: () => Promise.reject(new Error("delegation never claims a nonce")), inspect: async (q) => ({ ...(await ledger.inspect(q)), replay: null }) };
    },
  };
  let signedBy = null as string | null;
  const opts = { audience, mode: "audit" as const, now: call.now, policy: call.policy, onSigned: (fingerprint: string) => (signedBy = fingerprint) };
  let decision: Decision;
  // An envelope's own hop_count is not signed: it is judged by the envelope's checks (≤ 16), never read as the hop.
  if (envelope) decision = (await verifyEnvelope(value, { ...opts, orgId: call.orgId }, auditDeps)).decision;
  else decision = await verifyReceipt(value, opts, auditDeps);
  const critical = decision.failures.filter((f) => f.severity === "CRITICAL");
  if (critical.some((f) => MALFORMED.has(f.code))) return { kind: "malformed", detail: `delegation_chain: ${critical[0].detail}` };
  if (critical.length > 0) return { kind: "refused", codes: critical.map((f) => f.code), detail: critical.map((f) => `${f.code}: ${f.detail}`).join("; ") };
  const parent = receipt as { trace_id: string; verdict: string; runtime_context_hash?: unknown };
  // Valid evidence of a deny or an escalate is not an authorisation (CCS §4.7.3): nothing was granted to delegate.
  if (parent.verdict !== "allow") return { kind: "refused", codes: ["PARENT_NOT_ALLOW"], detail: `PARENT_NOT_ALLOW: the parent receipt is a valid ${parent.verdict}, which authorises nothing` };
  const read = await childHop(parent, call);
  if ("code" in read) return { kind: "refused", codes: [read.code], detail: `${read.code}: ${read.detail}` };
  // A chain holds hops 0 … MAX_CHAIN_HOPS − 1: a receipt past it could stand in no chain.
  if (read.hop >= MAX_CHAIN_HOPS) return { kind: "refused", codes: ["HOP_LIMIT_EXCEEDED"], detail: `HOP_LIMIT_EXCEEDED: hop ${read.hop} exceeds ${MAX_CHAIN_HOPS - 1}` };
  const validUntil = (receipt as Receipt).expires_at + grantedSkew(receipt as Receipt, call.policy);
  // A valid parent's signature verified under a pinned key, so signedBy is set; the list is kept free of repeats.
  const delegatedUnder = [...new Set([...(signedBy === null ? [] : [signedBy]), ...read.upstream])];
  return { kind: "linked", link: { previous_receipt_hash: decision.receipt_hash!, parent_trace_id: parent.trace_id, hop_count: read.hop }, validUntil, delegatedUnder };
}
