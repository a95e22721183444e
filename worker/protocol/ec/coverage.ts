/**
 * Required-claim coverage over runs: the share of required claims that a valid receipt with
 * evidence covers. A run with no required claims is left out of the denominator and counted
 * apart, so an empty requirement never reads as perfect coverage.
 */
import type { EvidenceRef } from "./evidence.js";

export interface RunCoverageInput {
  run_id: string;
  required_claims: string[];
  receipts: { claim_id: string; valid: boolean; evidence: EvidenceRef[] }[];
}

export interface Coverage {
  /** covered / required over runs with required claims; null when no run requires any. */
  coverage: number | null;
  covered: number;
  required: number;
  runs_counted: number;
  empty_required_sets: number;
  /** Distinct evidence references (by doc_id, span_id, offsets and hash) behind the covered claims. */
  unique_references: number;
  uncovered: { run_id: string; claim_id: string }[];
}

const refIdentity = (r: EvidenceRef) => [r.doc_id, r.span_id, r.start, r.end, r.text_sha256].join("\u0000");

export function requiredClaimCoverage(runs: RunCoverageInput[]): Coverage {
  let covered = 0;
  let required = 0;
  let empty = 0;
  const refs = new Set<string>();
  const uncovered: { run_id: string; claim_id: string }[] = [];
  for (const run of runs) {
    const needed = [...new Set(run.required_claims)];
    if (needed.length === 0) {
      empty++;
      continue;
    }
    required += needed.length;
    for (const claimId of needed) {
      const backing = run.receipts.filter((r) => r.claim_id === claimId && r.valid && r.evidence.length > 0);
      if (backing.length === 0) {
        uncovered.push({ run_id: run.run_id, claim_id: claimId });
        continue;
      }
      covered++;
      for (const r of backing) for (const ref of r.evidence) refs.add(refIdentity(ref));
    }
  }
  return { coverage: required ? covered / required : null, covered, required, runs_counted: runs.length - empty, empty_required_sets: empty, unique_references: refs.size, uncovered };
}
