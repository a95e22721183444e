/**
 * Decision counts, batched in isolate memory and flushed to the one DecisionStats Durable
 * Object at most every FLUSH_EVERY_MS (or every FLUSH_EVERY_DECISIONS decisions), so counting
 * costs no write on any issuer's ledger and at most one small write per isolate per interval.
 *
 * Labels are admin-bounded: a pinned issuer counts under its own name, anything else under
 * UNPINNED, so no string an unauthenticated caller chose becomes a map key or a row. Codes come
 * from the closed list (plus ACCEPTED). Counts an isolate holds when it is evicted are lost:
 * these are operational figures, not evidence.
 */
import type { Decision } from "./protocol/verify.js";

export const UNPINNED = "unpinned";
export const ACCEPTED = "ACCEPTED";

/** One (label, code) count of a batch. */
export interface DecisionCount {
  label: string;
  code: string;
  n: number;
}

export interface FlushPolicy {
  /** Flush once the oldest unflushed count is this old, milliseconds. */
  everyMs: number;
  /** Flush once this many decisions are unflushed. */
  everyDecisions: number;
}

export const DEFAULT_FLUSH: FlushPolicy = { everyMs: 10_000, everyDecisions: 1_000 };

/** The codes a decision is counted under: ACCEPTED and its warnings, or each distinct failure. */
export function decisionCodes(d: Decision): string[] {
  const codes = d.valid ? [ACCEPTED] : [];
  for (const f of d.failures) if (!codes.includes(f.code)) codes.push(f.code);
  return codes;
}

export class DecisionCounter {
  private counts = new Map<string, Map<string, number>>();
  private pending = 0;
  private oldest: number | null = null;

  constructor(
    private readonly policy: FlushPolicy = DEFAULT_FLUSH,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Counts one decision under `label`; answers the batch to flush now, or null. */
  count(label: string, codes: string[]): DecisionCount[] | null {
    let byCode = this.counts.get(label);
    if (!byCode) this.counts.set(label, (byCode = new Map()));
    for (const code of codes) byCode.set(code, (byCode.get(code) ?? 0) + 1);
    this.pending++;
    const now = this.clock();
    this.oldest ??= now;
    if (this.pending < this.policy.everyDecisions && now - this.oldest < this.policy.everyMs) return null;
    return this.drain();
  }

  /** Everything held, emptied. */
  drain(): DecisionCount[] {
    const batch: DecisionCount[] = [];
    for (const [label, byCode] of this.counts) for (const [code, n] of byCode) batch.push({ label, code, n });
    this.counts.clear();
    this.pending = 0;
    this.oldest = null;
    return batch;
  }

  /** Labels held; bounded by the pinned issuers plus UNPINNED. */
  labels(): number {
    return this.counts.size;
  }
}
