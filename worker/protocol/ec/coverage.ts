/**
 * Required-claim lexical coverage over runs: the share of required claims that some receipt
 * covers, where covering means the receipt is integrity-valid *and* one of its (verified)
 * spans supports the claim under the lexical predicate. Each required claim counts once. A run
 * with no required claims is left out of the denominator and counted apart, so an empty
 * requirement never reads as perfect coverage. A run that exhausted its budget gets no
 * implicit receipt: its termination reason is recorded and its missing claims are uncovered.
 */
import type { EvidenceRef } from "./evidence.js";

export const TERMINATIONS = ["answered", "budget_exhausted", "timeout"] as const;
export type Termination = (typeof TERMINATIONS)[number];

export interface RunCoverageInput {
  run_id: string;
  required_claims: string[];
  termination: Termination;
  receipts: { claim_id: string; valid: boolean; supported: boolean | null; evidence: EvidenceRef[] }[];
}

export type UncoveredReason = "no_receipt" | "integrity_invalid" | "not_supported" | Exclude<Termination, "answered">;

export interface Coverage {
  /** covered / required over runs with required claims; null when no run requires any. */
  coverage: number | null;
  covered: number;
  required: number;
  runs_counted: number;
  empty_required_sets: number;
  /** Distinct evidence references (by doc_id, span_id, offsets and hash) behind the covered claims. */
  unique_references: number;
  /** Termination reason of every run that did not end with its answer. */
  terminations: { run_id: string; termination: Termination }[];
  uncovered: { run_id: string; claim_id: string; reason: UncoveredReason }[];
}

const refIdentity = (r: EvidenceRef) => [r.doc_id, r.span_id, r.start, r.end, r.text_sha256].join("\u0000");

export function requiredClaimCoverage(runs: RunCoverageInput[]): Coverage {
  let covered = 0;
  let required = 0;
  let empty = 0;
  const refs = new Set<string>();
  const uncovered: Coverage["uncovered"] = [];
  for (const run of runs) {
    const needed = [...new Set(run.required_claims)];
    if (needed.length === 0) {
      empty++;
      continue;
    }
    required += needed.length;
    // Receipts by claim, once per run: a look-up per required claim, not a pass over every receipt.
    const byClaim = new Map<string, RunCoverageInput["receipts"]>();
    for (const r of run.receipts) byClaim.get(r.claim_id)?.push(r) ?? byClaim.set(r.claim_id, [r]);
    for (const claimId of needed) {
      const receipts = byClaim.get(claimId) ?? [];
      const backing = receipts.filter((r) => r.valid && r.supported === true && r.evidence.length > 0);
      if (backing.length === 0) {
        const reason: UncoveredReason =
          receipts.length === 0 ? (run.termination === "answered" ? "no_receipt" : run.termination) : receipts.some((r) => r.valid) ? "not_supported" : "integrity_invalid";
        uncovered.push({ run_id: run.run_id, claim_id: claimId, reason });
        continue;
      }
      covered++;
      for (const r of backing) for (const ref of r.evidence) refs.add(refIdentity(ref));
    }
  }
  return {
    coverage: required ? covered / required : null,
    covered,
    required,
    runs_counted: runs.length - empty,
    empty_required_sets: empty,
    unique_references: refs.size,
    terminations: runs.filter((r) => r.termination !== "answered").map((r) => ({ run_id: r.run_id, termination: r.termination })),
    uncovered,
  };
}
