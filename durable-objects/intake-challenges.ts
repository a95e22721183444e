/**
 * IntakeChallenges: the open challenge of one trace_id (one object per trace_id, one row). Only
 * intake, behind INTAKE_TOKEN, opens one; a newer deny for the same trace_id replaces it, and an
 * alarm deletes it CHALLENGE_RETENTION seconds after its deadline, so the storage is bounded by
 * the intake rate × (deadline + retention). Each method is one synchronous transaction: `take`
 * checks the deadline and claims the challenge in one step, so two answers never both re-evaluate.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";

/** Seconds a challenge is kept after its deadline, so a late answer is told CHALLENGE_EXPIRED rather than not found. */
export const CHALLENGE_RETENTION = 3600;

export type StoredChallenge = {
  /** The Command as judged (its normalised intake message), as JSON text. */
  message: string;
  audience: string;
  /** The missing evidence, as JSON text. */
  gaps: string;
  issued_at: number;
  expires_at: number;
};

export type Take =
  | { kind: "open"; challenge: StoredChallenge }
  | { kind: "expired"; expires_at: number }
  | { kind: "answered" }
  | { kind: "unknown" };

export class IntakeChallenges extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS challenge (id INTEGER PRIMARY KEY CHECK (id = 1), message TEXT NOT NULL, audience TEXT NOT NULL, gaps TEXT NOT NULL, issued_at REAL NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL)");
  }

  /** Opens (or replaces) the challenge; deleted CHALLENGE_RETENTION seconds after its deadline. */
  open(c: StoredChallenge): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO challenge (id, message, audience, gaps, issued_at, expires_at, state) VALUES (1, ?, ?, ?, ?, ?, 'open')",
      c.message, c.audience, c.gaps, c.issued_at, c.expires_at,
    );
    void this.ctx.storage.setAlarm((c.expires_at + CHALLENGE_RETENTION) * 1000);
  }

  /** Claims an open challenge at `now` (Unix seconds): open until expires_at inclusive; a claimed one answers once. */
  take(now: number): Take {
    const row = this.sql.exec<StoredChallenge & { state: string }>("SELECT message, audience, gaps, issued_at, expires_at, state FROM challenge WHERE id = 1").toArray()[0];
    if (!row) return { kind: "unknown" };
    if (now > row.expires_at) return { kind: "expired", expires_at: row.expires_at };
    if (row.state !== "open") return { kind: "answered" };
    this.sql.exec("UPDATE challenge SET state = 'taken' WHERE id = 1");
    const { state: _s, ...challenge } = row;
    return { kind: "open", challenge };
  }

  /** Gives a claimed challenge back (its answer could not be judged), or leaves it open with the evidence still missing. */
  release(gaps: string | null): void {
    if (gaps === null) this.sql.exec("UPDATE challenge SET state = 'open' WHERE id = 1");
    else this.sql.exec("UPDATE challenge SET state = 'open', gaps = ? WHERE id = 1", gaps);
  }

  async alarm(): Promise<void> {
    this.sql.exec("DELETE FROM challenge");
  }
}
