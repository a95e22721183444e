/**
 * IntakeChallenges: the open challenge of one trace_id (one object per trace_id, one row). Only
 * intake, behind INTAKE_TOKEN, opens one; another attempt at the same intake replaces it only until
 * the journal recorded an admission, whose attempt then confirms its own challenge. Each
 * method is one synchronous transaction: `take` checks the deadline and claims the challenge in
 * one step, so two answers never both re-evaluate.
 *
 * Its alarm carries the challenge to its end, a bounded number of runs per challenge: at the
 * deadline it closes the trace's journal record (awaiting_approval → denied: the deny stands),
 * unless an answer is being judged at that moment, in which case it looks again ANSWER_GRACE_SECONDS
 * later (by then that answer was recorded, or given back and the challenge can close); a record an
 * answer moved on (its `answered` mark may have failed to write) leaves the row answered; a journal
 * that cannot be reached is tried again every CLOSE_RETRY_SECONDS until the row's retention ends;
 * CHALLENGE_RETENTION seconds after the deadline the object's storage is deleted whole (its table
 * too). Nothing is stored before `open`: the table is created there, so an answer for a trace_id
 * no challenge was opened for (404) creates nothing. Storage is bounded by the
 * intake rate × (deadline + retention).
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { dependencyTimeout, journalShards } from "../worker/config.js";
import { closeExpiredChallenge, durableJournalStub, INTAKE_TENANT, journalClient } from "../worker/journal-store.js";
import { hasTable } from "./sql.js";

/** Seconds a challenge is kept after its deadline, so a late answer is told CHALLENGE_EXPIRED rather than not found. */
export const CHALLENGE_RETENTION = 3600;
/** Seconds the deadline alarm waits for an answer that was being judged when it fired. */
export const ANSWER_GRACE_SECONDS = 60;
/** Seconds between attempts to close the journal record when the journal could not be reached. */
export const CLOSE_RETRY_SECONDS = 60;

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
  /** `answering`: an answer taken in time is still being judged, so the record is not closed from here. */
  | { kind: "expired"; expires_at: number; answering: boolean }
  /** An answer was recorded: the evidence satisfied the challenge, or a check made the deny final. */
  | { kind: "answered" }
  /** Another answer is being judged now; one that falls short gives the challenge back. */
  | { kind: "judging" }
  | { kind: "unknown" };

/**
 * The row's state: `open`; `taken` while an answer is judged; `taken-at-deadline` when the
 * deadline alarm found it taken; `answered` once an answer was recorded that needs no other (kept
 * so until its deletion, past the deadline too: later answers are told it was answered, not that
 * the deny stands);
 * `closing` while the journal record is being closed; `closed` once it was (or needed nothing),
 * waiting for deletion. A row taken before `answered` existed stays `taken` once answered.
 */
type RowState = "open" | "taken" | "taken-at-deadline" | "answered" | "closing" | "closed";

export class IntakeChallenges extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
  }

  /** Whether `open` has created the table; a read-only look at the schema (nothing is created to ask). */
  private exists(): boolean {
    return hasTable(this.sql, "challenge");
  }

  private row() {
    if (!this.exists()) return undefined;
    return this.sql.exec<StoredChallenge & { state: RowState }>("SELECT message, audience, gaps, issued_at, expires_at, state FROM challenge WHERE id = 1").toArray()[0];
  }

  /**
   * The table, with the columns that tell whose challenge the row is: `attempt` (the nonce of the
   * receipt whose challenge it is) and `confirmed` (1 once the journal recorded that receipt). A
   * table an earlier version created lacks them: its row was opened with no confirmation step, and
   * counts as confirmed, so an attempt's `open` never replaces it, but with no attempt (`attempt`
   * null): the retry whose admission the journal then records (the earlier version's attempt was
   * not recorded, or no attempt would judge anew) puts its own challenge in place at `confirm`.
   */
  private table(): void {
    this.sql.exec("CREATE TABLE IF NOT EXISTS challenge (id INTEGER PRIMARY KEY CHECK (id = 1), message TEXT NOT NULL, audience TEXT NOT NULL, gaps TEXT NOT NULL, issued_at REAL NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL, attempt TEXT, confirmed INTEGER NOT NULL DEFAULT 0)");
    const columns = this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('challenge')").toArray().map((r) => r.name);
    if (!columns.includes("attempt")) this.sql.exec("ALTER TABLE challenge ADD COLUMN attempt TEXT");
    if (!columns.includes("confirmed")) this.sql.exec("ALTER TABLE challenge ADD COLUMN confirmed INTEGER NOT NULL DEFAULT 1");
  }

  private write(c: StoredChallenge, attempt: string, confirmed: 0 | 1): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO challenge (id, message, audience, gaps, issued_at, expires_at, state, attempt, confirmed) VALUES (1, ?, ?, ?, ?, ?, 'open', ?, ?)",
      c.message, c.audience, c.gaps, c.issued_at, c.expires_at, attempt, confirmed,
    );
    void this.ctx.storage.setAlarm(c.expires_at * 1000);
  }

  /**
   * Opens the challenge of one attempt at an intake (`attempt`: its receipt's nonce), before the
   * journal records that attempt's admission; its alarm fires at the deadline. It replaces a row no
   * recorded admission confirmed (an attempt whose record was not written: the retry judges anew),
   * never a confirmed one: identical intakes sent at once each judge and open, the journal records
   * one, and an attempt that lost that race must not move the recorded challenge's deadline or
   * reopen a challenge already answered. Whether it opened.
   */
  open(c: StoredChallenge, attempt: string): boolean {
    this.table();
    const held = this.sql.exec<{ confirmed: number; state: RowState }>("SELECT confirmed, state FROM challenge WHERE id = 1").toArray()[0];
    if (held && held.confirmed) return false;
    // Unconfirmed but taken or answered: an answer found its record in the journal, so that attempt
    // was recorded and only its confirmation is missing (it failed, or the answer came first).
    if (held && (held.state === "taken" || held.state === "taken-at-deadline" || held.state === "answered")) return false;
    this.write(c, attempt, 0);
    return true;
  }

  /**
   * The journal recorded this attempt's admission: its challenge is the one, whichever attempt
   * opened last. A row already confirmed is kept, unless the earlier version opened it (no
   * `attempt`): the journal recording this attempt means that row's attempt was never recorded, and
   * its deadline, set when it was judged (minutes earlier, say, before a failed write and the
   * upgrade), is not the one this admission announced. This attempt's own row is
   * only marked confirmed. Another attempt's row that an answer has taken meanwhile (an answer can
   * come as soon as the record awaits evidence) keeps its state and evidence and takes this
   * attempt's deadline; an open one is replaced by this attempt's challenge.
   */
  confirm(c: StoredChallenge, attempt: string): void {
    this.table();
    const held = this.sql.exec<{ confirmed: number; attempt: string | null; state: RowState }>("SELECT confirmed, attempt, state FROM challenge WHERE id = 1").toArray()[0];
    if (held?.confirmed && held.attempt !== null) return;
    // Its own row, opened by this attempt: only confirmed, so the evidence an answer that fell short
    // brought meanwhile (an answer can come as soon as the journal holds the record) stays in it.
    if (held?.attempt === attempt) {
      this.sql.exec("UPDATE challenge SET confirmed = 1 WHERE id = 1");
    } else if (!held || held.state === "open") {
      this.write(c, attempt, 1);
      return;
    } else {
      this.sql.exec("UPDATE challenge SET issued_at = ?, expires_at = ?, attempt = ?, confirmed = 1 WHERE id = 1", c.issued_at, c.expires_at, attempt);
      if (held.state !== "closing" && held.state !== "closed") void this.ctx.storage.setAlarm(c.expires_at * 1000);
    }
    // The deadline's alarm ran before the journal held this admission (it found no record to close):
    // the record awaits evidence now, so the row is open again and the alarm runs at
    // once (or at the deadline) to close it. A record it did close is left as it is by that run.
    if (held && (held.state === "closed" || held.state === "closing")) {
      this.sql.exec("UPDATE challenge SET state = 'open' WHERE id = 1");
      void this.ctx.storage.setAlarm(Math.max(Date.now(), this.row()!.expires_at * 1000));
    }
  }

  /**
   * The challenge a retry of the intake is answered with (read only): the row while it is open at
   * `now` (Unix seconds, expires_at inclusive) and the journal recorded the attempt it belongs to
   * (confirmed), so the deadline shown is the one that holds; else null (nothing to answer, being
   * judged, answered, expired, or not yet confirmed).
   */
  pending(now: number): Pick<StoredChallenge, "gaps" | "issued_at" | "expires_at"> | null {
    if (!this.exists()) return null;
    const row = this.sql.exec<Pick<StoredChallenge, "gaps" | "issued_at" | "expires_at"> & { state: RowState; confirmed: number }>("SELECT gaps, issued_at, expires_at, state, confirmed FROM challenge WHERE id = 1").toArray()[0];
    if (!row || row.state !== "open" || !row.confirmed || now > row.expires_at) return null;
    return { gaps: row.gaps, issued_at: row.issued_at, expires_at: row.expires_at };
  }

  /** Claims an open challenge at `now` (Unix seconds): open until expires_at inclusive; a claimed one answers once. */
  take(now: number): Take {
    const row = this.row();
    if (!row) return { kind: "unknown" };
    // Answered stays answered past the deadline: the deny did not stand, the evidence moved the record on.
    if (row.state === "answered") return { kind: "answered" };
    if (now > row.expires_at || row.state === "closing" || row.state === "closed") return { kind: "expired", expires_at: row.expires_at, answering: row.state === "taken" || row.state === "taken-at-deadline" };
    if (row.state !== "open") return { kind: "judging" };
    this.sql.exec("UPDATE challenge SET state = 'taken' WHERE id = 1");
    const { state: _s, ...challenge } = row;
    return { kind: "open", challenge };
  }

  /**
   * Gives a claimed challenge back (its answer could not be judged), or leaves it open with the
   * evidence still missing and the message as last judged: the evidence an answer did bring is kept
   * in it, so the next answer need only bring what is still missing.
   */
  release(gaps: string | null, message?: string): void {
    if (!this.exists()) return;
    if (gaps === null) this.sql.exec("UPDATE challenge SET state = 'open' WHERE id = 1 AND state IN ('taken', 'taken-at-deadline')");
    else if (message === undefined) this.sql.exec("UPDATE challenge SET state = 'open', gaps = ? WHERE id = 1 AND state IN ('taken', 'taken-at-deadline')", gaps);
    else this.sql.exec("UPDATE challenge SET state = 'open', gaps = ?, message = ? WHERE id = 1 AND state IN ('taken', 'taken-at-deadline')", gaps, message);
  }

  /** The claimed challenge's answer was recorded and needs no other: later answers are told so, not that one is being judged. */
  answered(): void {
    if (!this.exists()) return;
    this.sql.exec("UPDATE challenge SET state = 'answered' WHERE id = 1 AND state IN ('taken', 'taken-at-deadline')");
  }

  async alarm(): Promise<void> {
    const row = this.row();
    if (!row) return;
    const deleteAtMs = (row.expires_at + CHALLENGE_RETENTION) * 1000;
    if (row.state === "closed") {
      await this.ctx.storage.deleteAll();
      return;
    }
    if (row.state === "answered") {
      // Nothing to close: an answer already moved the record on. Kept, still answered, until its retention ends.
      if (Date.now() >= deleteAtMs) await this.ctx.storage.deleteAll();
      else await this.ctx.storage.setAlarm(deleteAtMs);
      return;
    }
    if (row.state === "taken") {
      // An answer is being judged (or was accepted): let it finish before the record is closed.
      this.sql.exec("UPDATE challenge SET state = 'taken-at-deadline' WHERE id = 1");
      await this.ctx.storage.setAlarm(Date.now() + ANSWER_GRACE_SECONDS * 1000);
      return;
    }
    // From here no answer is taken: the deny stands.
    this.sql.exec("UPDATE challenge SET state = 'closing' WHERE id = 1");
    const traceId = String((JSON.parse(row.message) as { trace_id: unknown }).trace_id);
    let failure: unknown = null;
    let outcome: Awaited<ReturnType<typeof closeExpiredChallenge>> | null = null;
    try {
      const journal = journalClient(durableJournalStub(this.env), INTAKE_TENANT, journalShards(this.env), dependencyTimeout(this.env)).port;
      outcome = await closeExpiredChallenge(journal, traceId, row.expires_at);
    } catch (err) {
      failure = err;
    }
    // A newer deny may have replaced the challenge meanwhile: it has its own alarm.
    const now = this.row();
    if (!now || now.state !== "closing" || now.expires_at !== row.expires_at) return;
    if (failure === null) {
      // An answer the journal recorded while its `answered` mark failed to write is answered, not a deny that stands.
      this.sql.exec("UPDATE challenge SET state = ? WHERE id = 1", outcome === "answered" ? "answered" : "closed");
      await this.ctx.storage.setAlarm(deleteAtMs);
      return;
    }
    console.error(JSON.stringify({ event: "challenge_close_failed", trace_id: traceId, error: String(failure) }));
    const retryAtMs = Date.now() + CLOSE_RETRY_SECONDS * 1000;
    if (retryAtMs < deleteAtMs) await this.ctx.storage.setAlarm(retryAtMs);
    else await this.ctx.storage.deleteAll();
  }
}
