/** Runs the committed CCS vectors against any target that speaks the HTTP contract. */
import doc from "../../vectors/ccs/receipts.json" with { type: "json" };
import propagation from "../../vectors/ccs/propagation.json" with { type: "json" };

export const ccsVectors = doc;
export type CcsVector = (typeof doc.vectors)[number];
export type VectorCall = CcsVector["calls"][number];

export interface Answer {
  status: number;
  body: {
    valid: boolean;
    decision: string;
    failures: { code: string }[];
    enforcement: { action: string };
    nonce_consumed: boolean;
  };
}

/** The relying party a vector's calls are made by, when its setup registers one (a verifier-class floor). */
export const vectorParty = (v: CcsVector): { name: string; token: string; min_verifier_class: string } | null =>
  ("setup" in v && v.setup && "relying_party" in v.setup ? (v.setup.relying_party as { name: string; token: string; min_verifier_class: string }) : null);

export const rawBodyOf = (call: VectorCall): string => ("raw_body" in call ? call.raw_body : JSON.stringify(call.body));

/** The differences between what a call expects and what it got; empty when they agree. */
export function mismatches(call: VectorCall, got: Answer): string[] {
  const e = call.expect;
  const out: string[] = [];
  const codes = got.body.failures?.map((f) => f.code);
  if (got.status !== e.status) out.push(`status ${got.status}, expected ${e.status}`);
  if (got.body.valid !== e.valid) out.push(`valid ${got.body.valid}, expected ${e.valid}`);
  if (got.body.decision !== e.decision) out.push(`decision ${got.body.decision}, expected ${e.decision}`);
  if (JSON.stringify(codes) !== JSON.stringify(e.codes)) out.push(`codes ${JSON.stringify(codes)}, expected ${JSON.stringify(e.codes)}`);
  if (e.action && got.body.enforcement?.action !== e.action) out.push(`action ${got.body.enforcement?.action}, expected ${e.action}`);
  if (got.body.nonce_consumed !== e.nonce_consumed) out.push(`nonce_consumed ${got.body.nonce_consumed}, expected ${e.nonce_consumed}`);
  return out;
}

export const propagationVectors = propagation;
export type ChainVector = (typeof propagation.chains)[number];

export interface ChainAnswer {
  status: number;
  body: { chain_valid: boolean; broken_at_hop: number | null; failures: { hop: number; code: string }[]; summary_hash: string; spot_valid: boolean | null };
}

/** The differences between a chain vector's expectation and an answer; empty when they agree. */
export function chainMismatches(v: ChainVector, got: ChainAnswer): string[] {
  const e = v.expect;
  const out: string[] = [];
  const failures = got.body.failures?.map((f) => `${f.hop}:${f.code}`);
  if (got.status !== e.status) out.push(`status ${got.status}, expected ${e.status}`);
  if (got.body.chain_valid !== e.chain_valid) out.push(`chain_valid ${got.body.chain_valid}, expected ${e.chain_valid}`);
  if (got.body.broken_at_hop !== e.broken_at_hop) out.push(`broken_at_hop ${got.body.broken_at_hop}, expected ${e.broken_at_hop}`);
  if (JSON.stringify(failures) !== JSON.stringify(e.failures)) out.push(`failures ${JSON.stringify(failures)}, expected ${JSON.stringify(e.failures)}`);
  if ("summary_hash" in e && got.body.summary_hash !== e.summary_hash) out.push(`summary_hash ${got.body.summary_hash}, expected ${e.summary_hash}`);
  if ("spot_valid" in e && got.body.spot_valid !== e.spot_valid) out.push(`spot_valid ${got.body.spot_valid}, expected ${e.spot_valid}`);
  return out;
}
