/**
 * Decision counts, batched in isolate memory and flushed to the one DecisionStats Durable
 * Object when a count is taken and the oldest unflushed one is `everyMs` old (or `everyDecisions`
 * are held), so counting costs no write on any issuer's ledger and at most one small write per
 * isolate per interval. There is no timer: a quiet isolate holds its counts until its next
 * decision. Each count carries the minute it was taken in, so a late flush still books it under
 * that minute. Live chains started are batched the same way.
 *
 * Labels are admin-bounded: a pinned issuer counts under its own name, anything else under
 * UNPINNED, so no string an unauthenticated caller chose becomes a map key or a row. Codes come
 * from the closed list plus the three outcome labels (ACCEPTED, DENIED, DEFERRED). Counts an
 * isolate holds when it is evicted are lost: these are operational figures, not evidence.
 */
import type { Decision } from "./protocol/verify.js";
import type { Verdict } from "./protocol/receipt.js";

export const UNPINNED = "unpinned";
/** A valid receipt answered `decision: "accept"` (enforce mode, verdict allow). */
export const ACCEPTED = "ACCEPTED";
/** A valid receipt answered `decision: "reject"`: a genuine deny. */
export const DENIED = "DENIED";
/** A valid receipt answered `decision: "defer"`: a genuine escalate, or an allow reported indeterminate or unknown. */
export const DEFERRED = "DEFERRED";

const OUTCOME_LABELS: Partial<Record<Decision["decision"], string>> = { accept: ACCEPTED, reject: DENIED, defer: DEFERRED };

/** One (minute, label, code) count of a batch; `minute` is the minute it was counted in (Unix ms / 60,000, floored). */
export interface DecisionCount {
  minute: number;
  label: string;
  code: string;
  n: number;
}

/** Verdicts of valid receipts of one pinned issuer in a batch (CCS 13.7): allow, and deny or escalate. */
export interface VerdictCount {
  label: string;
  allows: number;
  others: number;
}

/** What one flush carries: counts by label and code, decisions by label, verdicts by pinned issuer, live chains started. */
export interface MetricsBatch {
  codes: DecisionCount[];
  verdicts: VerdictCount[];
  /** Decisions per minute counted in and label (a decision with several codes counts once here). */
  decisions: { minute: number; label: string; n: number }[];
  chainsStarted: number;
}

export interface FlushPolicy {
  /** Flush once the oldest unflushed count is this old, milliseconds. */
  everyMs: number;
  /** Flush once this many decisions are unflushed. */
  everyDecisions: number;
}

export const DEFAULT_FLUSH: FlushPolicy = { everyMs: 10_000, everyDecisions: 1_000 };

/**
 * The codes a decision is counted under: for a valid receipt its outcome label (ACCEPTED,
 * DENIED or DEFERRED, by the decision answered) and its warnings; otherwise each distinct failure.
 */
export function decisionCodes(d: Decision): string[] {
  const outcome = d.valid ? OUTCOME_LABELS[d.decision] : undefined;
  const codes = outcome ? [outcome] : [];
  for (const f of d.failures) if (!codes.includes(f.code)) codes.push(f.code);
  return codes;
}

/** The minute (Unix ms / 60,000, floored) a count taken at `ms` belongs to. */
export const minuteOf = (ms: number): number => Math.floor(ms / 60_000);

const SEP = "\u0000";

export class DecisionCounter {
  /** `minute SEP label SEP code` → count. */
  private counts = new Map<string, number>();
  /** `minute SEP label` → decisions. */
  private perLabel = new Map<string, number>();
  private verdicts = new Map<string, { allows: number; others: number }>();
  /** Issuers DecisionStats answered as flagged for review at this isolate's last flush. */
  private review = new Set<string>();
  /** When the review flags were last learned (this counter's clock), or null: never. */
  private reviewLearnedAt: number | null = null;
  /** When a read of the flags last failed before they were ever learned (this counter's clock), or null. */
  private reviewFailedAt: number | null = null;
  private reviewLoading: Promise<void> | null = null;
  private chainsStarted = 0;
  private pending = 0;
  private oldest: number | null = null;

  constructor(
    private readonly policy: FlushPolicy = DEFAULT_FLUSH,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Counts one decision under `label`, and the verdict of a valid receipt of a pinned issuer
   * (`verdict`, else null); answers the batch to flush now, or null.
   */
  count(label: string, codes: string[], verdict: Verdict | null = null): MetricsBatch | null {
    const at = `${minuteOf(this.clock())}${SEP}${label}`;
    for (const code of codes) this.counts.set(`${at}${SEP}${code}`, (this.counts.get(`${at}${SEP}${code}`) ?? 0) + 1);
    this.perLabel.set(at, (this.perLabel.get(at) ?? 0) + 1);
    if (verdict !== null) this.addVerdict(label, verdict);
    return this.held();
  }

  /** The 13.7 lifetime count of one receipt's verdict, for a pinned issuer only. */
  private addVerdict(label: string, verdict: Verdict): void {
    if (label === UNPINNED) return;
    let tally = this.verdicts.get(label);
    if (!tally) this.verdicts.set(label, (tally = { allows: 0, others: 0 }));
    if (verdict === "allow") tally.allows++;
    else tally.others++;
  }

  /**
   * Tallies the verdict of a valid receipt of a pinned issuer whose nonce was consumed by a call
   * that is not a decision (a live chain's append): the 13.7 lifetime counts, one per receipt, and
   * no per-minute decision count; answers the batch to flush now, or null.
   */
  tally(label: string, verdict: Verdict): MetricsBatch | null {
    if (label === UNPINNED) return null;
    this.addVerdict(label, verdict);
    return this.held();
  }

  /** What DecisionStats answered a flush with: the issuers now flagged for review (replaces the last answer). */
  learnReview(flagged: readonly string[]): void {
    this.review = new Set(flagged);
    this.reviewLearnedAt = this.clock();
  }

  /**
   * Keeps the review flags known without waiting for a flush. A flush teaches them, but a fresh
   * isolate has flushed nothing (it would answer a flagged issuer with its declared class and no
   * warning, and a relying party's class floor would accept it), and one serving audit calls only
   * never flushes. `load` reads the flagged issuers (null when it could not). Until they are
   * learned, a promise to wait for is answered to the first decision and to every decision whose
   * class floor depends on them (`floored`: a floor above Class C); the others go on, the read
   * handed to `background`, and a failed read is tried again at the next call with a floor, or in
   * the background at most once a second (a DecisionStats that fails fast is not read once per
   * call of every isolate that never learned them). Once learned, they
   * are read again in the background when the last learning is a flush interval old (at least a
   * second); a failed read then keeps them and is not retried within the interval.
   */
  refreshReview(load: () => Promise<readonly string[] | null>, background: (loading: Promise<void>) => void, floored = false): Promise<void> | null {
    const learnedAt = this.reviewLearnedAt;
    if (learnedAt !== null && this.clock() - learnedAt < Math.max(this.policy.everyMs, 1_000)) return null;
    const failedAt = this.reviewFailedAt;
    const wait = learnedAt === null && (floored || failedAt === null);
    if (!wait && learnedAt === null && failedAt !== null && this.clock() - failedAt < 1_000) return null;
    if (!this.reviewLoading) {
      this.reviewLoading = load()
        .then((flagged) => {
          if (flagged) this.learnReview(flagged);
          else if (this.reviewLearnedAt !== null) this.reviewLearnedAt = this.clock();
          else this.reviewFailedAt = this.clock();
        })
        .finally(() => (this.reviewLoading = null));
      if (!wait) background(this.reviewLoading);
    }
    return wait ? this.reviewLoading : null;
  }

  /** Whether the review flags were ever learned in this isolate (a flush or a read answered them). */
  reviewKnown(): boolean {
    return this.reviewLearnedAt !== null;
  }

  /** Whether the last flush answered `issuer` as flagged for review; reads nothing. */
  flagged(issuer: string): boolean {
    return this.review.has(issuer);
  }

  /** Counts a live chain that just took its hop 0; answers the batch to flush now, or null. */
  chainStarted(): MetricsBatch | null {
    this.chainsStarted++;
    return this.held();
  }

  private held(): MetricsBatch | null {
    this.pending++;
    const now = this.clock();
    this.oldest ??= now;
    if (this.pending < this.policy.everyDecisions && now - this.oldest < this.policy.everyMs) return null;
    return this.drain();
  }

  /** Everything held, emptied. */
  drain(): MetricsBatch {
    const codes: DecisionCount[] = [...this.counts].map(([key, n]) => {
      const [minute, label, code] = key.split(SEP);
      return { minute: Number(minute), label, code, n };
    });
    const decisions = [...this.perLabel].map(([key, n]) => {
      const [minute, label] = key.split(SEP);
      return { minute: Number(minute), label, n };
    });
    const verdicts = [...this.verdicts].map(([label, t]) => ({ label, ...t }));
    const batch = { codes, verdicts, decisions, chainsStarted: this.chainsStarted };
    this.counts.clear();
    this.perLabel.clear();
    this.verdicts.clear();
    this.chainsStarted = 0;
    this.pending = 0;
    this.oldest = null;
    return batch;
  }

  /** Labels held; bounded by the pinned issuers plus UNPINNED. */
  labels(): number {
    return new Set([...this.perLabel.keys()].map((key) => key.split(SEP)[1])).size;
  }
}
