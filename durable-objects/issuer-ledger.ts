/**
 * IssuerLedger: the replay state of one issuer (or of one shard of a hot issuer). Each decision
 * is one RPC whose reads and writes run in one synchronous SQLite transaction: refuse a revoked
 * kid, claim the nonce, admit the sequence, count the outcome. A nonce is kept until its
 * receipt's `expires_at + skew`; an alarm purges what has passed, so the table holds at most
 * rate × (lifetime + skew + PURGE_INTERVAL) rows.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { judgeReplay, type ClaimQuery, type LedgerAnswer, type LedgerQuery } from "../worker/protocol/ledger.js";
import { decodeBitmap, encodeBitmap, EMPTY_WINDOW, type SequenceWindow } from "../worker/protocol/replay-window.js";

/** Purges are batched: an alarm never fires sooner than this after the previous one. */
export const PURGE_INTERVAL_MS = 30_000;

export interface LedgerStats {
  nonces: number;
  window: { highest: number };
  revoked: { kid: string; revoked_at: number }[];
  counters: Record<string, number>;
}

export class IssuerLedger extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private window: SequenceWindow;
  private revoked: Set<string>;
  private alarmAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS nonces (nonce TEXT PRIMARY KEY, retain_until REAL NOT NULL);
      CREATE INDEX IF NOT EXISTS nonces_by_retention ON nonces (retain_until);
      CREATE TABLE IF NOT EXISTS seq_window (id INTEGER PRIMARY KEY CHECK (id = 1), highest INTEGER NOT NULL, bitmap TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS revoked (kid TEXT PRIMARY KEY, revoked_at REAL NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (code TEXT PRIMARY KEY, n INTEGER NOT NULL);
    `);
    const w = this.sql.exec<{ highest: number; bitmap: string }>("SELECT highest, bitmap FROM seq_window WHERE id = 1").toArray()[0];
    this.window = w ? { highest: w.highest, bitmap: decodeBitmap(w.bitmap) } : EMPTY_WINDOW;
    this.revoked = new Set(this.sql.exec<{ kid: string }>("SELECT kid FROM revoked").toArray().map((row) => row.kid));
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

  private count(codes: string[]): void {
    for (const code of codes) {
      this.sql.exec("INSERT INTO counters (code, n) VALUES (?, 1) ON CONFLICT (code) DO UPDATE SET n = n + 1", code);
    }
  }

  claim(q: ClaimQuery): LedgerAnswer {
    const answer = this.ctx.storage.transactionSync(() => {
      const { answer, next } = this.judge(q);
      if (answer.revoked || answer.replay || !next) {
        this.count([...(answer.revoked ? ["ANCHOR_REVOKED"] : []), ...(answer.replay ? ["REPLAY_DETECTED"] : [])]);
        return answer;
      }
      this.sql.exec("INSERT INTO nonces (nonce, retain_until) VALUES (?, ?)", q.nonce, q.retainUntil);
      this.sql.exec(
        "INSERT INTO seq_window (id, highest, bitmap) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET highest = excluded.highest, bitmap = excluded.bitmap",
        next.highest,
        encodeBitmap(next.bitmap),
      );
      this.count(["ACCEPTED", ...q.warnings]);
      this.window = next;
      return { ...answer, consumed: true };
    });
    if (answer.consumed) this.schedulePurge(q.retainUntil * 1000);
    return answer;
  }

  inspect(q: LedgerQuery): LedgerAnswer {
    return this.judge(q).answer;
  }

  /** Counts a decision the Worker rejected before it reached the ledger. */
  record(codes: string[]): void {
    this.ctx.storage.transactionSync(() => this.count(codes));
  }

  revoke(kid: string, at: number): { kid: string; revoked_at: number } {
    this.sql.exec("INSERT INTO revoked (kid, revoked_at) VALUES (?, ?) ON CONFLICT (kid) DO NOTHING", kid, at);
    this.revoked.add(kid);
    const row = this.sql.exec<{ revoked_at: number }>("SELECT revoked_at FROM revoked WHERE kid = ?", kid).one();
    return { kid, revoked_at: row.revoked_at };
  }

  stats(): LedgerStats {
    const nonces = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM nonces").one().n;
    const counters = Object.fromEntries(this.sql.exec<{ code: string; n: number }>("SELECT code, n FROM counters ORDER BY code").toArray().map((r) => [r.code, r.n]));
    const revoked = this.sql.exec<{ kid: string; revoked_at: number }>("SELECT kid, revoked_at FROM revoked ORDER BY kid").toArray();
    return { nonces, window: { highest: this.window.highest }, revoked, counters };
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
    return this.sql.exec("DELETE FROM nonces WHERE retain_until * 1000 <= ?", nowMs).rowsWritten;
  }
}
