/**
 * IssuerLedger: the replay state of one issuer (or of one shard of a hot issuer). Each decision
 * is one RPC whose reads and writes run in one synchronous SQLite transaction: refuse a revoked
 * kid, claim the nonce, admit the sequence, count the outcome. An accepted claim writes two rows
 * (the nonce, and the one `state` row holding the window and the counters). A nonce is kept
 * until its receipt's `expires_at + skew`; an alarm purges what has passed, so the table holds at
 * most rate × (lifetime + skew + PURGE_INTERVAL) rows.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { judgeReplay, type ClaimQuery, type LedgerAnswer, type LedgerQuery } from "../worker/protocol/ledger.js";
import { decodeBitmap, encodeBitmap, EMPTY_WINDOW, type SequenceWindow } from "../worker/protocol/replay-window.js";

/** Purges are batched: an alarm never fires sooner than this after the previous one. */
export const PURGE_INTERVAL_MS = 30_000;

export interface Revocation {
  kid: string;
  revoked_at: number;
}

export interface LedgerStats {
  nonces: number;
  /** Size of this object's SQLite database, bytes (free pages included). */
  database_bytes: number;
  window: { highest: number };
  revoked: Revocation[];
  counters: Record<string, number>;
}

type Counters = Record<string, number>;

export class IssuerLedger extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private window: SequenceWindow = EMPTY_WINDOW;
  private counters: Counters = {};
  private revoked: Set<string>;
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    // No index on retain_until: every claim would pay for it, while the purge that would use it
    // runs at most every PURGE_INTERVAL_MS over a table bounded by rate × retention.
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS nonces (nonce TEXT PRIMARY KEY, retain_until REAL NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS state (id INTEGER PRIMARY KEY CHECK (id = 1), highest INTEGER NOT NULL, bitmap TEXT NOT NULL, counters TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS revoked (kid TEXT PRIMARY KEY, revoked_at REAL NOT NULL);
    `);
    const row = this.sql.exec<{ highest: number; bitmap: string; counters: string }>("SELECT highest, bitmap, counters FROM state WHERE id = 1").toArray()[0];
    if (row) {
      this.window = { highest: row.highest, bitmap: decodeBitmap(row.bitmap) };
      this.counters = JSON.parse(row.counters) as Counters;
    }
    this.revoked = new Set(this.sql.exec<{ kid: string }>("SELECT kid FROM revoked").toArray().map((r) => r.kid));
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  private judge(q: LedgerQuery): { answer: LedgerAnswer; next: SequenceWindow | null } {
    return judgeReplay(q, {
      nonceSeen: this.sql.exec("SELECT 1 FROM nonces WHERE nonce = ?", q.nonce).toArray().length > 0,
      kidRevoked: q.kid !== null && this.revoked.has(q.kid),
      window: this.window,
    });
  }

  /** Writes the window and the counters (plus `codes`) in the one state row; memory follows on success. */
  private saveState(window: SequenceWindow, codes: string[]): () => void {
    const counters = { ...this.counters };
    for (const code of codes) counters[code] = (counters[code] ?? 0) + 1;
    this.sql.exec(
      "INSERT INTO state (id, highest, bitmap, counters) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET highest = excluded.highest, bitmap = excluded.bitmap, counters = excluded.counters",
      window.highest,
      encodeBitmap(window.bitmap),
      JSON.stringify(counters),
    );
    return () => {
      this.window = window;
      this.counters = counters;
    };
  }

  claim(q: ClaimQuery): LedgerAnswer {
    const { answer, commit } = this.ctx.storage.transactionSync(() => {
      const { answer, next } = this.judge(q);
      if (answer.revoked || answer.replay || !next) {
        const codes = [...(answer.revoked ? ["ANCHOR_REVOKED"] : []), ...(answer.replay ? ["REPLAY_DETECTED"] : [])];
        return { answer, commit: this.saveState(this.window, codes) };
      }
      this.sql.exec("INSERT INTO nonces (nonce, retain_until) VALUES (?, ?)", q.nonce, q.retainUntil);
      return { answer: { ...answer, consumed: true }, commit: this.saveState(next, ["ACCEPTED", ...q.warnings]) };
    });
    commit();
    if (answer.consumed) this.schedulePurge(q.retainUntil * 1000);
    return answer;
  }

  inspect(q: LedgerQuery): LedgerAnswer {
    return this.judge(q).answer;
  }

  /** Counts a decision the Worker rejected before it reached the ledger. */
  record(codes: string[]): void {
    this.ctx.storage.transactionSync(() => this.saveState(this.window, codes))();
  }

  revoke(kid: string, at: number): { kid: string; revoked_at: number } {
    this.sql.exec("INSERT INTO revoked (kid, revoked_at) VALUES (?, ?) ON CONFLICT (kid) DO NOTHING", kid, at);
    this.revoked.add(kid);
    const row = this.sql.exec<{ revoked_at: number }>("SELECT revoked_at FROM revoked WHERE kid = ?", kid).one();
    return { kid, revoked_at: row.revoked_at };
  }

  revocations(): Revocation[] {
    return this.sql.exec<{ kid: string; revoked_at: number }>("SELECT kid, revoked_at FROM revoked ORDER BY kid").toArray();
  }

  stats(): LedgerStats {
    const nonces = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM nonces").one().n;
    const revoked = this.revocations();
    const counters = Object.fromEntries(Object.entries(this.counters).sort(([a], [b]) => (a < b ? -1 : 1)));
    return { nonces, database_bytes: this.sql.databaseSize, window: { highest: this.window.highest }, revoked, counters };
  }

  private schedulePurge(retainUntilMs: number): void {
    if (this.alarmAt !== null) return;
    this.alarmAt = Math.max(retainUntilMs, Date.now() + PURGE_INTERVAL_MS);
    void this.ctx.storage.setAlarm(this.alarmAt);
  }

  /** Deletes every nonce whose retention has passed, then schedules the next purge. */
  async alarm(): Promise<void> {
    this.alarmAt = null;
    this.purge(Date.now());
    const next = this.sql.exec<{ t: number | null }>("SELECT MIN(retain_until) AS t FROM nonces").one().t;
    if (next !== null) this.schedulePurge(next * 1000);
  }

  purge(nowMs: number): number {
    return this.sql.exec("DELETE FROM nonces WHERE retain_until <= ?", nowMs / 1000).rowsWritten;
  }
}
