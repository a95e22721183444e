/**
 * DecisionStats: the deployment's decision counts, one object for all isolates. Each isolate
 * adds a batch at most every few seconds (worker/metrics.ts); a batch lands in the bucket of the
 * minute it arrives in. Buckets older than RETENTION_MINUTES are purged by an alarm, so the table
 * holds at most RETENTION_MINUTES × labels × codes rows, labels being the pinned issuers plus
 * "unpinned".
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import type { DecisionCount } from "../worker/metrics.js";

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

const minuteOf = (ms: number): number => Math.floor(ms / 60_000);

export class DecisionStats extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS buckets (minute INTEGER NOT NULL, label TEXT NOT NULL, code TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (minute, label, code)) WITHOUT ROWID",
    );
  }

  async add(batch: DecisionCount[]): Promise<void> {
    const minute = minuteOf(Date.now());
    this.ctx.storage.transactionSync(() => {
      for (const { label, code, n } of batch) {
        this.sql.exec("INSERT INTO buckets (minute, label, code, n) VALUES (?, ?, ?, ?) ON CONFLICT (minute, label, code) DO UPDATE SET n = n + excluded.n", minute, label, code, n);
      }
    });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + PURGE_EVERY_MS);
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

  /** Deletes buckets past the retention; keeps purging while any remain. */
  async alarm(): Promise<void> {
    this.purge(Date.now());
    const left = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM buckets").one().n;
    if (left > 0) await this.ctx.storage.setAlarm(Date.now() + PURGE_EVERY_MS);
  }

  purge(nowMs: number): number {
    return this.sql.exec("DELETE FROM buckets WHERE minute <= ?", minuteOf(nowMs) - RETENTION_MINUTES).rowsWritten;
  }
}
