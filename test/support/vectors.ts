/** Runs the committed CCS vectors against any target that speaks the HTTP contract. */
import doc from "../../vectors/ccs/receipts.json" with { type: "json" };

export const ccsVectors = doc;
export type CcsVector = (typeof doc.vectors)[number];
export type VectorCall = CcsVector["calls"][number];

export interface Answer {
  status: number;
  body: {
    valid: boolean;
    failures: { code: string }[];
    enforcement: { action: string };
    nonce_consumed: boolean;
  };
}

export const rawBodyOf = (call: VectorCall): string => ("raw_body" in call ? call.raw_body : JSON.stringify(call.body));

/** The differences between what a call expects and what it got; empty when they agree. */
export function mismatches(call: VectorCall, got: Answer): string[] {
  const e = call.expect;
  const out: string[] = [];
  const codes = got.body.failures?.map((f) => f.code);
  if (got.status !== e.status) out.push(`status ${got.status}, expected ${e.status}`);
  if (got.body.valid !== e.valid) out.push(`valid ${got.body.valid}, expected ${e.valid}`);
  if (JSON.stringify(codes) !== JSON.stringify(e.codes)) out.push(`codes ${JSON.stringify(codes)}, expected ${JSON.stringify(e.codes)}`);
  if (e.action && got.body.enforcement?.action !== e.action) out.push(`action ${got.body.enforcement?.action}, expected ${e.action}`);
  if (got.body.nonce_consumed !== e.nonce_consumed) out.push(`nonce_consumed ${got.body.nonce_consumed}, expected ${e.nonce_consumed}`);
  return out;
}
