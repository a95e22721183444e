/**
 * DecisionStats: the deployment's decision counts, one object for all isolates. Each isolate
 * adds a batch at most once per flush interval (worker/metrics.ts); each count lands in the
 * bucket of the minute the isolate counted it in (a minute ahead of this object's clock is booked
 * now; one already past the retention is dropped). Buckets older than RETENTION_MINUTES are
 * purged by an alarm, so the table
 * holds at most RETENTION_MINUTES × labels × codes rows, labels being the pinned issuers plus
 * "unpinned". Decisions per label (each decision once, however many codes it carries) are kept
 * the same way; the live chains started are one lifetime counter. The verdicts of each pinned
 * issuer's valid receipts are lifetime counters too (CCS 13.7's allow-only detection needs the
 * long run, not the last day): one row per pinned issuer, written only by a flush.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import type { MetricsBatch } from "../worker/metrics.js";
import { DEFAULT_REVIEW_THRESHOLD, type VerdictTally } from "../worker/protocol/conformance/verifier-class.js";

export const RETENTION_MINUTES = 24 * 60;
const PURGE_EVERY_MS = 60 * 60_000;

export interface DecisionStatsView {
  /** Unix seconds of the first and last minute covered. */
  from: number;
  to: number;
  retention_minutes: number;
  /** Counts per label (a pinned issuer or "unpinned") and code, summed over the period. */
  totals: Record<string, Record<string, number>>;
  /** Counts per minute and code, all labels together, oldest first. */
  per_minute: { minute: number; counts: Record<string, number> }[];
}

/** Per-minute series of the last minutes, for the status page's chart. */
export interface DecisionSeries {
  /** Unix seconds of the first and last minute; every series has one count per minute in between. */
  from: number;
  to: number;
  /** Code (failure code or outcome label) → counts per minute, oldest first. */
  byCode: Record<string, number[]>;
  /** Decisions per minute of the busiest labels, the rest summed under OTHER_LABELS. */
  byLabel: Record<string, number[]>;
  /** Labels summed under OTHER_LABELS. */
  labelsFolded: number;
}

/** The series key of the labels past the busiest; an issuer is an https:// URI, so it never collides. */
export const OTHER_LABELS = "other issuers";

const minuteOf = (ms: number): number => Math.floor(ms / 60_000);

export class DecisionStats extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      `CREATE TABLE IF NOT EXISTS buckets (minute INTEGER NOT NULL, label TEXT NOT NULL, code TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (minute, label, code)) WITHOUT ROWID;
       CREATE TABLE IF NOT EXISTS decisions (minute INTEGER NOT NULL, label TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (minute, label)) WITHOUT ROWID;
       CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
       CREATE TABLE IF NOT EXISTS verdicts (label TEXT PRIMARY KEY, allows INTEGER NOT NULL, others INTEGER NOT NULL) WITHOUT ROWID;`,
    );
  }

  /**
   * Adds a batch; answers the issuers flagged for review under `reviewThreshold` (CCS 13.7), so
   * each isolate learns them at its flush and its decisions carry the warning without a read.
   */
  async add(batch: MetricsBatch, reviewThreshold: number = DEFAULT_REVIEW_THRESHOLD): Promise<string[]> {
    const now = minuteOf(Date.now());
    // A count is booked under the minute it was counted in: never a future one, nothing past the retention.
    const minuteFor = (counted: number | undefined): number | null => {
      const m = typeof counted === "number" && Number.isSafeInteger(counted) ? Math.min(counted, now) : now;
      return m > now - RETENTION_MINUTES ? m : null;
    };
    const flagged = this.ctx.storage.transactionSync(() => {
      for (const { label, allows, others } of batch.verdicts ?? []) {
        this.sql.exec("INSERT INTO verdicts (label, allows, others) VALUES (?, ?, ?) ON CONFLICT (label) DO UPDATE SET allows = allows + excluded.allows, others = others + excluded.others", label, allows, others);
      }
      for (const { minute: counted, label, code, n } of batch.codes) {
        const minute = minuteFor(counted);
        if (minute !== null) this.sql.exec("INSERT INTO buckets (minute, label, code, n) VALUES (?, ?, ?, ?) ON CONFLICT (minute, label, code) DO UPDATE SET n = n + excluded.n", minute, label, code, n);
      }
      for (const { minute: counted, label, n } of batch.decisions) {
        const minute = minuteFor(counted);
        if (minute !== null) this.sql.exec("INSERT INTO decisions (minute, label, n) VALUES (?, ?, ?) ON CONFLICT (minute, label) DO UPDATE SET n = n + excluded.n", minute, label, n);
      }
      if (batch.chainsStarted > 0) {
        this.sql.exec("INSERT INTO counters (name, n) VALUES ('chains_started', ?) ON CONFLICT (name) DO UPDATE SET n = n + excluded.n", batch.chainsStarted);
      }
      return this.flagged(reviewThreshold);
    });
    if (batch.codes.length > 0 || batch.decisions.length > 0) {
      if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + PURGE_EVERY_MS);
    }
    return flagged;
  }

  /** CCS 13.7: the issuers whose every counted verdict is allow, at least `threshold` of them. */
  flagged(threshold: number): string[] {
    return this.sql.exec<{ label: string }>("SELECT label FROM verdicts WHERE others = 0 AND allows >= ? ORDER BY label", threshold).toArray().map((r) => r.label);
  }

  /** One issuer's verdicts over its pinned life (never purged: one row per pinned issuer). */
  tally(label: string): VerdictTally {
    return this.sql.exec<{ allows: number; others: number }>("SELECT allows, others FROM verdicts WHERE label = ?", label).toArray()[0] ?? { allows: 0, others: 0 };
  }

  /** The last `minutes` minutes (at most the retention), totals and per minute. */
  read(minutes: number): DecisionStatsView {
    const to = minuteOf(Date.now());
    const from = to - Math.min(Math.max(1, minutes), RETENTION_MINUTES) + 1;
    const rows = this.sql.exec<{ minute: number; label: string; code: string; n: number }>("SELECT minute, label, code, n FROM buckets WHERE minute >= ? ORDER BY minute, label, code", from).toArray();
    const totals: Record<string, Record<string, number>> = {};
    const perMinute = new Map<number, Record<string, number>>();
    for (const { minute, label, code, n } of rows) {
      const byCode = (totals[label] ??= {});
      byCode[code] = (byCode[code] ?? 0) + n;
      let counts = perMinute.get(minute);
      if (!counts) perMinute.set(minute, (counts = {}));
      counts[code] = (counts[code] ?? 0) + n;
    }
    return {
      from: from * 60,
      to: to * 60,
      retention_minutes: RETENTION_MINUTES,
      totals,
      per_minute: [...perMinute].map(([minute, counts]) => ({ minute: minute * 60, counts })),
    };
  }

  /**
   * The last `minutes` (at most the retention) as one count per minute: per code, and decisions
   * per label for the `labels` busiest labels of the period (the rest folded into OTHER_LABELS).
   */
  series(minutes: number, labels: number): DecisionSeries {
    const to = minuteOf(Date.now());
    const from = to - Math.min(Math.max(1, minutes), RETENTION_MINUTES) + 1;
    const empty = () => new Array<number>(to - from + 1).fill(0);
    const byCode: Record<string, number[]> = {};
    for (const { minute, code, n } of this.sql.exec<{ minute: number; code: string; n: number }>("SELECT minute, code, SUM(n) AS n FROM buckets WHERE minute >= ? GROUP BY minute, code", from)) {
      (byCode[code] ??= empty())[minute - from] += n;
    }
    const busiest = this.sql.exec<{ label: string }>("SELECT label FROM decisions WHERE minute >= ? GROUP BY label ORDER BY SUM(n) DESC, label LIMIT ?", from, Math.max(0, labels)).toArray().map((r) => r.label);
    const shown = new Set(busiest);
    const byLabel: Record<string, number[]> = Object.fromEntries(busiest.map((l) => [l, empty()]));
    const folded = new Set<string>();
    for (const { minute, label, n } of this.sql.exec<{ minute: number; label: string; n: number }>("SELECT minute, label, n FROM decisions WHERE minute >= ?", from)) {
      if (!shown.has(label)) folded.add(label);
      (byLabel[shown.has(label) ? label : OTHER_LABELS] ??= empty())[minute - from] += n;
    }
    return { from: from * 60, to: to * 60, byCode, byLabel, labelsFolded: folded.size };
  }

  /** Live chains that took their hop 0, ever (a chain is never deleted). */
  chainsStarted(): number {
    return this.sql.exec<{ n: number }>("SELECT n FROM counters WHERE name = 'chains_started'").toArray()[0]?.n ?? 0;
  }

  /** Deletes buckets past the retention; keeps purging while any remain. */
  async alarm(): Promise<void> {
    this.purge(Date.now());
    const left = this.sql.exec<{ n: number }>("SELECT (SELECT COUNT(*) FROM buckets) + (SELECT COUNT(*) FROM decisions) AS n").one().n;
    if (left > 0) await this.ctx.storage.setAlarm(Date.now() + PURGE_EVERY_MS);
  }

  purge(nowMs: number): number {
    const before = minuteOf(nowMs) - RETENTION_MINUTES;
    return this.sql.exec("DELETE FROM buckets WHERE minute <= ?", before).rowsWritten + this.sql.exec("DELETE FROM decisions WHERE minute <= ?", before).rowsWritten;
  }
}
