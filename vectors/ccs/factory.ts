/**
 * Deterministic receipt factory: identities and receipts derived from labels, so the vector
 * generator and the tests build the very same bytes from the same inputs.
 */
import { sha256 } from "../../worker/protocol/digest.js";
import { publicKeyFromSeed } from "../../worker/protocol/ed25519.js";
import { toBase64Url, toHex } from "../../worker/protocol/encoding.js";
import { delegationContext, signReceipt, unsignedReceipt } from "../../worker/protocol/issue.js";
import type { PresentedRequest } from "../../worker/protocol/checks/binding.js";
import type { OPTIONAL_FIELDS, Receipt, Verdict } from "../../worker/protocol/receipt.js";
import { legacyMac } from "../../worker/protocol/conformance/level0.js";
import { legacyPayload } from "../../worker/protocol/issuing/legacy-hmac.js";

export interface Identity {
  issuer: string;
  kid: string;
  seed: Uint8Array;
  publicKey: string;
}

/** `n` hex characters derived from a label (SHA-256, repeated as needed). */
export async function labelHex(label: string, n: number): Promise<string> {
  let out = "";
  for (let i = 0; out.length < n; i++) out += toHex(await sha256(`countersign/vectors/${label}/${i}`));
  return out.slice(0, n);
}

export async function identity(label: string, issuer: string, kid: string): Promise<Identity> {
  const seed = await sha256(`countersign/vectors/seed/${label}`);
  return { issuer, kid, seed, publicKey: toBase64Url(publicKeyFromSeed(seed)) };
}

export const anchorFor = (...ids: Identity[]) => ({
  issuer: ids[0].issuer,
  org_id: null,
  keys: ids.map((id) => ({ kid: id.kid, alg: "Ed25519" as const, public_key: id.publicKey })),
});

export interface ReceiptSpec {
  label: string;
  audience: string;
  issuedAt: number;
  sequence: number;
  lifetime?: number;
  skew?: number;
  verdict?: Verdict;
  tool?: string;
  params?: unknown;
  response?: unknown;
  runtimeContext?: unknown;
  /** Sign as this identity but claim another issuer (the attacker's own key). */
  claimIssuer?: string;
  /** The config_hash to carry (default: one derived from the label "config"). */
  configHash?: string;
  /** SHOULD fields the receipt leaves out; the signature covers the fields present. */
  omit?: (typeof OPTIONAL_FIELDS)[number][];
  /** Field 7 as the HMAC under this shared secret (Level 0), rather than a label's digest. */
  legacySecret?: Uint8Array;
}

export async function makeReceipt(id: Identity, s: ReceiptSpec): Promise<{ receipt: Receipt; request: PresentedRequest }> {
  const request: PresentedRequest = {
    agent_id: "agent://vectors/planner",
    tool: s.tool ?? "payments.transfer",
    params: s.params ?? { amount: 125, currency: "EUR", to: "acct-7731" },
    timestamp: s.issuedAt - 1,
    trace_id: await labelHex(`${s.label}/trace`, 16),
  };
  const unsigned = await unsignedReceipt({
    request,
    issuer: s.claimIssuer ?? id.issuer,
    audience: s.audience,
    verdict: s.verdict ?? "allow",
    issued_at: s.issuedAt,
    lifetime: s.lifetime ?? 120,
    nonce: await labelHex(`${s.label}/nonce`, 32),
    sequence: s.sequence,
    max_clock_skew: s.skew ?? 5,
    rule_summary: "SEC-001=allow|SEC-004=allow|policy-floor=allow",
    config_hash: s.configHash ?? "sha256:" + (await labelHex("config", 64)),
    legacy_receipt: await labelHex(`${s.label}/legacy`, 32),
    response: s.response,
    runtime_context: s.runtimeContext,
  });
  for (const field of s.omit ?? []) delete unsigned[field];
  if (s.legacySecret) unsigned.receipt = legacyMac(legacyPayload(unsigned), s.legacySecret);
  return { receipt: signReceipt(unsigned, id.seed), request };
}

/**
 * Receipts for consecutive hops of one delegation, hop 0 first: each one's runtime context (its
 * spec's own, plus `delegation`) names the receipt before, so every link of the chain is signed.
 */
export async function makeChainHops(hops: { id: Identity; spec: ReceiptSpec }[]): Promise<{ receipt: Receipt; runtime_context: Record<string, unknown>; request: PresentedRequest }[]> {
  const out: { receipt: Receipt; runtime_context: Record<string, unknown>; request: PresentedRequest }[] = [];
  for (const [i, { id, spec }] of hops.entries()) {
    const runtimeContext = await delegationContext(out[i - 1]?.receipt ?? null, i, (spec.runtimeContext ?? {}) as Record<string, unknown>);
    const { receipt, request } = await makeReceipt(id, { ...spec, runtimeContext });
    out.push({ receipt, runtime_context: runtimeContext, request });
  }
  return out;
}
