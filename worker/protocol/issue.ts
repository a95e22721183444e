/**
 * Issuing side of the wire profile: the fields a receipt binds, computed from the request it
 * admits, and its Ed25519 signature. Used by the demo, the CLI, the vector generator and the tests.
 */
import { jcs, prefixedDigest, sha256Hex } from "./digest.js";
import { signWithSeed } from "./ed25519.js";
import { toHex } from "./encoding.js";
import { ACTION_PREFIX, canonicalReceipt, type Receipt, type UnsignedReceipt, type Verdict } from "./receipt.js";
import type { PresentedRequest } from "./checks/binding.js";
import { receiptDigest, receiptHashOf, type Delegation } from "./chain.js";

export interface ReceiptInput {
  request: PresentedRequest;
  issuer: string;
  audience: string;
  verdict: Verdict;
  block_reason?: string;
  issued_at: number;
  /** Seconds from issued_at to expires_at. */
  lifetime: number;
  nonce: string;
  sequence: number;
  max_clock_skew: number;
  rule_summary: string;
  config_hash: string;
  /** The legacy 32-hex `receipt` field. */
  legacy_receipt: string;
  response?: unknown;
  runtime_context?: unknown;
}

const optionalHash = async (value: unknown): Promise<string> => (value === undefined ? "" : prefixedDigest(jcs(value)));

export async function unsignedReceipt(i: ReceiptInput): Promise<UnsignedReceipt> {
  const q = i.request;
  const paramsDigest = await sha256Hex(jcs(q.params));
  return {
    action: `${ACTION_PREFIX}${q.tool}:${paramsDigest}`,
    audience: i.audience,
    block_reason: i.verdict === "allow" ? "" : (i.block_reason ?? `blocked by policy (${i.verdict})`),
    config_hash: i.config_hash,
    expires_at: i.issued_at + i.lifetime,
    issued_at: i.issued_at,
    issuer: i.issuer,
    max_clock_skew: i.max_clock_skew,
    nonce: i.nonce,
    params_hash: paramsDigest.slice(0, 16),
    receipt: i.legacy_receipt,
    request_hash: await prefixedDigest(jcs({ agent_id: q.agent_id, tool: q.tool, params: q.params, timestamp: q.timestamp, trace_id: q.trace_id })),
    response_hash: await optionalHash(i.response),
    rule_summary: i.rule_summary,
    runtime_context_hash: await optionalHash(i.runtime_context),
    sequence: i.sequence,
    // The verdict time, which need not be the Command's own timestamp (that one is bound by request_hash).
    timestamp: i.issued_at,
    tool: q.tool,
    trace_id: q.trace_id,
    verdict: i.verdict,
    verified_at: i.issued_at,
  };
}

/** Signs the canonical bytes of the 21 other fields with an Ed25519 seed. */
export function signReceipt(u: UnsignedReceipt, seed: Uint8Array): Receipt {
  const { signedBytes } = canonicalReceipt(u);
  return { ...u, signature: toHex(signWithSeed(signedBytes, seed)) };
}

/**
 * The runtime context of a receipt issued for hop `hop` of a delegation chain: `base` plus
 * `delegation`, naming the previous hop's receipt (none at hop 0). Bound by the receipt's
 * `runtime_context_hash`, it is what makes the receipt's link to the previous hop a signed one.
 */
export async function delegationContext(previous: Receipt | null, hop: number, base: Record<string, unknown> = {}): Promise<Record<string, unknown> & { delegation: Delegation }> {
  const delegation: Delegation = previous
    ? { previous_receipt_hash: receiptHashOf(await receiptDigest(previous as unknown as Record<string, unknown>)), parent_trace_id: previous.trace_id, hop_count: hop }
    : { previous_receipt_hash: null, parent_trace_id: null, hop_count: hop };
  return { ...base, delegation };
}
