/**
 * IssuingSequence: the `sequence` counter of one issuing key (one object per key fingerprint).
 * Each call is one synchronous SQLite statement that increments and returns the stored value,
 * so numbers are strictly increasing and never repeat: calls from any isolate are serialised by
 * the object, and the value survives restarts because it is read back from storage, never held
 * only in memory. One row per key, whatever the traffic.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";

export class IssuingSequence extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS sequence (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)");
  }

  /** The next number: 1 for a new key, then one more than the last number handed out. */
  next(): number {
    return this.sql
      .exec<{ value: number }>("INSERT INTO sequence (id, value) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET value = value + 1 RETURNING value")
      .one().value;
  }

  /** The last number handed out (0 when none was). */
  current(): number {
    return this.sql.exec<{ value: number }>("SELECT value FROM sequence WHERE id = 1").toArray()[0]?.value ?? 0;
  }
}
