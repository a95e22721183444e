/**
 * ReceiptJournal: one shard of one tenant's tool receipt journal (the CCS local evidence store).
 * Records are spread over a fixed number of shards by their id (docs/capacity.md); each object
 * holds its records' index rows and their append-only histories. Every method runs the protocol's
 * journal rules (worker/protocol/journal/core.ts) inside one synchronous SQLite transaction: the
 * replay, the checks and the write happen with no await between them, and the answer leaves only
 * once the write is durable. A lease that passes its deadline is lapsed by the alarm. Nothing is
 * written before the first reservation: reads of an empty shard create no table.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { JournalInputError, journalCore, type JournalCore, type JournalRow, type JournalStorage } from "../worker/protocol/journal/core.js";
import type { AppendInput, AppendManyInput, ClaimInput, JournalEntry, JournalQuery, ReconciliationMark, RecordSummary, ReserveInput, VerifyFenceInput } from "../worker/protocol/journal/port.js";
import { IN_FLIGHT_STATES } from "../worker/protocol/journal/lifecycle.js";
import { hasTable } from "./sql.js";

/**
 * CCS §14, revocation of evidence in flight: the key each admission was signed under (its
 * entry's `detail.admitted_under`) and the admission's `expires_at`, indexed by key; for a
 * delegated admission, the keys its authority rests on (`detail.delegated_under`: the key that
 * signed its parent, then those the parent's admission rested on), indexed the same way; the keys
 * revoked; the records marked for reconciliation because they were in flight under a revoked key
 * (`via`: `admission`, the key signed the admission, or `delegation`, it signed a parent the
 * admission was delegated from). Created with the first admission or the first revocation a shard
 * is told of.
 */
/** Came after the first shards were created: an older shard gets these (and `reconciliation_marks.via`) when it starts. */
const DELEGATION_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS delegation_keys (record_id TEXT NOT NULL, fingerprint TEXT NOT NULL, expires_at REAL, PRIMARY KEY (record_id, fingerprint)) WITHOUT ROWID",
  "CREATE INDEX IF NOT EXISTS delegation_keys_by_key ON delegation_keys (fingerprint)",
];
/** How many keys a delegated admission is indexed under at most: one per hop a chain can hold. */
const MAX_DELEGATED_KEYS = 16;
const REVOCATION_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS admission_keys (record_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, expires_at REAL) WITHOUT ROWID",
  "CREATE INDEX IF NOT EXISTS admission_keys_by_key ON admission_keys (fingerprint)",
  "CREATE TABLE IF NOT EXISTS revoked_keys (fingerprint TEXT PRIMARY KEY, revoked_at REAL NOT NULL) WITHOUT ROWID",
  "CREATE TABLE IF NOT EXISTS reconciliation_marks (record_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, revoked_at REAL NOT NULL, marked_at REAL NOT NULL, via TEXT) WITHOUT ROWID",
  "CREATE INDEX IF NOT EXISTS reconciliation_marks_by_key ON reconciliation_marks (fingerprint)",
  ...DELEGATION_SCHEMA,
];
const IN_FLIGHT = IN_FLIGHT_STATES.map((s) => `'${s}'`).join(", ");
const HEX64 = /^[0-9a-f]{64}$/;

/** A caller's input refused by the journal's rules, carried back over RPC as a value. */
export type Invalid = { kind: "invalid"; code: JournalInputError["code"]; detail: string };

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS records (
    record_id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL, action_digest TEXT NOT NULL,
    state TEXT NOT NULL, effect TEXT NOT NULL, revision INTEGER NOT NULL, fence INTEGER NOT NULL,
    lease_fence INTEGER, lease_until REAL, lease_deadline_ms INTEGER,
    created_at REAL NOT NULL, updated_at REAL NOT NULL,
    agent_id TEXT, tool TEXT, trace_id TEXT, verdict TEXT, outcome_status TEXT, head TEXT
  ) WITHOUT ROWID`,
  "CREATE INDEX IF NOT EXISTS records_by_time ON records (created_at, record_id)",
  "CREATE INDEX IF NOT EXISTS records_by_lease ON records (lease_deadline_ms) WHERE lease_deadline_ms IS NOT NULL",
  "CREATE TABLE IF NOT EXISTS entries (record_id TEXT NOT NULL, revision INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (record_id, revision)) WITHOUT ROWID",
];

const ROW_COLUMNS = [
  "record_id", "idempotency_key", "action_digest", "state", "effect", "revision", "fence", "lease_fence", "lease_until", "lease_deadline_ms",
  "created_at", "updated_at", "agent_id", "tool", "trace_id", "verdict", "outcome_status", "head",
] as const;

export class ReceiptJournal extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly core: JournalCore;
  private hasSchema: boolean;
  /** Rows written by this instance since it started (SQLite's own count, indexes included): for the capacity figures. */
  private rowsWritten = 0;
  private hasRevocationSchema: boolean;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.hasSchema = hasTable(this.sql, "records");
    // `head` (the latest entry's digest) came after the first shards were created: an older table gets the column, null until each row's next write.
    if (this.hasSchema && !this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('records')").toArray().some((c) => c.name === "head")) {
      this.sql.exec("ALTER TABLE records ADD COLUMN head TEXT");
    }
    this.hasRevocationSchema = hasTable(this.sql, "admission_keys");
    // An admission's expires_at came after the first shards were created: older rows hold null, and a null is judged in flight.
    if (this.hasRevocationSchema && !this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('admission_keys')").toArray().some((c) => c.name === "expires_at")) {
      this.sql.exec("ALTER TABLE admission_keys ADD COLUMN expires_at REAL");
    }
    // The keys a delegated admission rests on came later still: an older shard gets their table and the marks' `via` (null is `admission`).
    if (this.hasRevocationSchema && !hasTable(this.sql, "delegation_keys")) {
      for (const statement of DELEGATION_SCHEMA) this.sql.exec(statement);
      if (!this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('reconciliation_marks')").toArray().some((c) => c.name === "via")) {
        this.sql.exec("ALTER TABLE reconciliation_marks ADD COLUMN via TEXT");
      }
    }
    this.core = journalCore(this.storage(), { leaseDeadline: (_at, seconds) => Date.now() + Math.ceil(seconds * 1000) });
  }

  private exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlStorageCursor<T> {
    return this.sql.exec<T>(query, ...bindings);
  }

  private storage(): JournalStorage {
    return {
      row: (id) => (this.hasSchema ? ((this.exec("SELECT * FROM records WHERE record_id = ?", id).toArray()[0] as unknown as JournalRow | undefined) ?? null) : null),
      history: (id) =>
        this.hasSchema ? this.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? ORDER BY revision", id).toArray().map((r) => JSON.parse(r.entry) as JournalEntry) : [],
      entriesAt: (id, revisions) =>
        this.hasSchema && revisions.length > 0
          ? this.exec<{ entry: string }>(`SELECT entry FROM entries WHERE record_id = ? AND revision IN (${revisions.map(() => "?").join(", ")}) ORDER BY revision`, id, ...revisions)
              .toArray()
              .map((r) => JSON.parse(r.entry) as JournalEntry)
          : [],
      write: (row, added, created) => {
        if (!this.hasSchema) {
          for (const statement of SCHEMA) this.sql.exec(statement);
          this.hasSchema = true;
        }
        const values = ROW_COLUMNS.map((c) => row[c]);
        const statement = created
          ? `INSERT INTO records (${ROW_COLUMNS.join(", ")}) VALUES (${ROW_COLUMNS.map(() => "?").join(", ")})`
          : `UPDATE records SET ${ROW_COLUMNS.slice(1).map((c) => `${c} = ?`).join(", ")} WHERE record_id = ?`;
        const cursor = created ? this.exec(statement, ...values) : this.exec(statement, ...values.slice(1), row.record_id);
        cursor.toArray();
        this.rowsWritten += cursor.rowsWritten;
        for (const e of added) {
          const c = this.exec("INSERT INTO entries (record_id, revision, entry) VALUES (?, ?, ?)", row.record_id, e.revision, JSON.stringify(e));
          c.toArray();
          this.rowsWritten += c.rowsWritten;
          const detail = e.detail as { admitted_under?: unknown; delegated_under?: unknown } | null;
          const under = detail?.admitted_under;
          if (e.receipt && typeof under === "string" && HEX64.test(under)) {
            const delegated = Array.isArray(detail?.delegated_under) ? detail.delegated_under.filter((k): k is string => typeof k === "string" && HEX64.test(k)).slice(0, MAX_DELEGATED_KEYS) : [];
            this.noteAdmission(row.record_id, under, delegated, e.receipt.expires_at, row.state, e.at);
          }
        }
      },
      due: (nowMs) =>
        this.hasSchema ? this.exec<{ record_id: string }>("SELECT record_id FROM records WHERE lease_deadline_ms IS NOT NULL AND lease_deadline_ms <= ?", nowMs).toArray().map((r) => r.record_id) : [],
    };
  }

  private revocationSchema(): void {
    if (this.hasRevocationSchema) return;
    for (const statement of REVOCATION_SCHEMA) this.sql.exec(statement);
    this.hasRevocationSchema = true;
  }

  /**
   * Indexes an admission by its signing key and, when it was delegated, by the keys its authority
   * rests on (the latest admission's set replaces an earlier one's); one admitted under a key
   * already revoked, or delegated from a parent whose key is, is marked at once.
   */
  private noteAdmission(recordId: string, fingerprint: string, delegated: readonly string[], expiresAt: unknown, state: string, at: number): void {
    this.revocationSchema();
    const expires = typeof expiresAt === "number" && Number.isFinite(expiresAt) ? expiresAt : null;
    this.exec(
      "INSERT INTO admission_keys (record_id, fingerprint, expires_at) VALUES (?, ?, ?) ON CONFLICT (record_id) DO UPDATE SET fingerprint = excluded.fingerprint, expires_at = excluded.expires_at",
      recordId, fingerprint, expires,
    ).toArray();
    this.exec("DELETE FROM delegation_keys WHERE record_id = ?", recordId).toArray();
    for (const key of delegated) {
      if (key !== fingerprint) this.exec("INSERT INTO delegation_keys (record_id, fingerprint, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", recordId, key, expires).toArray();
    }
    if (!(IN_FLIGHT_STATES as readonly string[]).includes(state)) return;
    for (const [key, via] of [[fingerprint, "admission"], ...delegated.map((k) => [k, "delegation"])] as const) {
      const revoked = this.exec<{ revoked_at: number }>("SELECT revoked_at FROM revoked_keys WHERE fingerprint = ?", key).toArray()[0];
      if (revoked) this.exec("INSERT INTO reconciliation_marks (record_id, fingerprint, revoked_at, marked_at, via) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", recordId, key, revoked.revoked_at, at, via).toArray();
    }
  }

  private marks(where: string, value: string): ReconciliationMark[] {
    if (!this.hasRevocationSchema || !this.hasSchema) return [];
    return this.exec<Record<string, SqlStorageValue>>(
      `SELECT m.record_id, r.trace_id, r.state, m.fingerprint, m.revoked_at, m.marked_at, COALESCE(m.via, 'admission') AS via FROM reconciliation_marks m JOIN records r ON r.record_id = m.record_id WHERE m.${where} = ? ORDER BY m.record_id`,
      value,
    ).toArray() as unknown as ReconciliationMark[];
  }

  /**
   * CCS §14: `fingerprint` has been revoked. Every record of this shard admitted under it, or
   * delegated from a parent it signed (or from one whose own admission rested on it), and still
   * in flight is marked for reconciliation, in one transaction with recording the revocation (so an
   * admission written later under that key is marked as it is written). A record carries one mark:
   * the first revocation's that reached it. A record still `ready`
   * whose admission is past `expires_at + grace` (the most skew a start grants it) is not in flight:
   * nothing can start on it any more, and it is closed expired when a start is tried, so the marks
   * stay as many as the admissions that could still run, not every admission the key ever signed.
   * Answers every record this key's revocation has marked here. Idempotent.
   */
  revokeKey(fingerprint: string, revokedAt: number, at: number, grace: number): ReconciliationMark[] {
    return this.ctx.storage.transactionSync(() => {
      this.revocationSchema();
      this.exec("INSERT INTO revoked_keys (fingerprint, revoked_at) VALUES (?, ?) ON CONFLICT DO NOTHING", fingerprint, revokedAt).toArray();
      const first = this.exec<{ revoked_at: number }>("SELECT revoked_at FROM revoked_keys WHERE fingerprint = ?", fingerprint).one().revoked_at;
      if (this.hasSchema) {
        this.exec(
          `INSERT INTO reconciliation_marks (record_id, fingerprint, revoked_at, marked_at)
           SELECT a.record_id, a.fingerprint, ?, ? FROM admission_keys a JOIN records r ON r.record_id = a.record_id
           WHERE a.fingerprint = ? AND r.state IN (${IN_FLIGHT})
             AND NOT (r.state = 'ready' AND a.expires_at IS NOT NULL AND a.expires_at + ? < ?) ON CONFLICT DO NOTHING`,
          first, at, fingerprint, grace, at,
        ).toArray();
        this.exec(
          `INSERT INTO reconciliation_marks (record_id, fingerprint, revoked_at, marked_at, via)
           SELECT d.record_id, d.fingerprint, ?, ?, 'delegation' FROM delegation_keys d JOIN records r ON r.record_id = d.record_id
           WHERE d.fingerprint = ? AND r.state IN (${IN_FLIGHT})
             AND NOT (r.state = 'ready' AND d.expires_at IS NOT NULL AND d.expires_at + ? < ?) ON CONFLICT DO NOTHING`,
          first, at, fingerprint, grace, at,
        ).toArray();
      }
      return this.marks("fingerprint", fingerprint);
    });
  }

  /**
   * CCS §14: the receipts issued for the records marked here via a delegation resting on
   * `fingerprint` (this deployment's own, by issuer and nonce, with their expires_at and the skew
   * they carry): what the revocation withdraws in the issuer's ledger, so that a child not yet
   * presented is refused there. Read from the journal's own entries, inside SQLite: only the
   * receipts issued before the record started (effect `not-started`: the admission, a challenge's
   * answer, an approval), which authorise an execution; a final receipt (finalize, reconcile) is the
   * outcome evidence of an execution started before the revocation and is not withdrawn (it used
   * to be, by a second revocation of the key only: the first runs before it exists).
   */
  delegatedReceipts(fingerprint: string): { issuer: string; nonce: string; expires_at: number; max_clock_skew: number | null }[] {
    if (!this.hasRevocationSchema || !this.hasSchema) return [];
    return this.exec<Record<string, SqlStorageValue>>(
      `SELECT json_extract(e.entry, '$.receipt.issuer') AS issuer, json_extract(e.entry, '$.receipt.nonce') AS nonce,
              json_extract(e.entry, '$.receipt.expires_at') AS expires_at, json_extract(e.entry, '$.receipt.max_clock_skew') AS max_clock_skew
       FROM reconciliation_marks m JOIN entries e ON e.record_id = m.record_id
       WHERE m.fingerprint = ? AND m.via = 'delegation' AND json_type(e.entry, '$.receipt.nonce') = 'text'
         AND json_extract(e.entry, '$.effect') = 'not-started'`,
      fingerprint,
    ).toArray().filter((r) => typeof r.issuer === "string" && typeof r.expires_at === "number") as unknown as { issuer: string; nonce: string; expires_at: number; max_clock_skew: number | null }[];
  }

  /** The records this shard marked for reconciliation under a revoked key. */
  marksFor(fingerprint: string): ReconciliationMark[] {
    return this.marks("fingerprint", fingerprint);
  }

  /** A record's reconciliation mark, or null. */
  markOf(recordId: string): ReconciliationMark | null {
    return this.marks("record_id", recordId)[0] ?? null;
  }

  /** One operation in one transaction; a refused input comes back as a value. */
  private run<T>(op: () => T): T | Invalid {
    try {
      return this.ctx.storage.transactionSync(op);
    } catch (err) {
      if (err instanceof JournalInputError) return { kind: "invalid", code: err.code, detail: err.message };
      throw err;
    }
  }

  /** Wakes the alarm for the earliest lease deadline held here, if it is not already set earlier. */
  private async scheduleLapse(): Promise<void> {
    if (!this.hasSchema) return;
    const next = this.exec<{ at: number | null }>("SELECT MIN(lease_deadline_ms) AS at FROM records WHERE lease_deadline_ms IS NOT NULL").one().at;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
  }

  reserve(input: ReserveInput) {
    return this.run(() => this.core.reserve(input));
  }

  append(input: AppendInput) {
    return this.run(() => this.core.append(input));
  }

  appendMany(input: AppendManyInput) {
    return this.run(() => this.core.appendMany(input));
  }

  /**
   * A claim of a record marked for reconciliation (CCS §14: admitted under a key since revoked) is
   * refused here, in the claim's own transaction: the start route's earlier look at the mark is a
   * separate call, and a revocation landing between that look and this claim would otherwise start
   * an admission already marked, after the revocation was answered.
   */
  async claim(input: ClaimInput) {
    const result = this.run(() => {
      const mark = this.markOf(input.record_id);
      if (mark) return { kind: "not-eligible" as const, state: mark.state, lease_lapsed: false };
      return this.core.claim(input);
    });
    if (result.kind === "claimed") await this.scheduleLapse();
    return result;
  }

  verifyFence(input: VerifyFenceInput) {
    return this.run(() => this.core.verifyFence(input));
  }

  load(recordId: string) {
    return this.run(() => this.core.load(recordId));
  }

  /** A record's reservation, checked without replaying its history (the journal core's `reservation`). */
  reservation(recordId: string) {
    return this.run(() => this.core.reservation(recordId));
  }

  loadByIdempotency(key: string) {
    return this.run(() => this.core.loadByIdempotency(key));
  }

  /** Lapses every lease past its deadline, then sleeps until the next one. */
  async alarm(): Promise<void> {
    this.ctx.storage.transactionSync(() => this.core.lapseDue(Date.now()));
    await this.scheduleLapse();
  }

  /** One page of this shard's records in (created_at, record_id) order, and whether more follow. */
  query(q: JournalQuery): { records: RecordSummary[]; more: boolean } {
    if (!this.hasSchema) return { records: [], more: false };
    const after = q.after ?? { created_at: -1, record_id: "" };
    const rows = this.exec<Record<string, SqlStorageValue>>(
      `SELECT record_id, trace_id, agent_id, tool, verdict, state, effect, outcome_status, revision, created_at, updated_at FROM records
       WHERE (created_at > ?1 OR (created_at = ?1 AND record_id > ?2))
         AND (?3 IS NULL OR agent_id = ?3) AND (?4 IS NULL OR tool = ?4) AND (?5 IS NULL OR verdict = ?5) AND (?6 IS NULL OR state = ?6)
         AND (?7 IS NULL OR created_at >= ?7) AND (?8 IS NULL OR created_at <= ?8)
       ORDER BY created_at, record_id LIMIT ?9`,
      after.created_at, after.record_id, q.agent_id ?? null, q.tool ?? null, q.verdict ?? null, q.state ?? null, q.from ?? null, q.to ?? null, q.limit + 1,
    ).toArray() as unknown as RecordSummary[];
    return { records: rows.slice(0, q.limit), more: rows.length > q.limit };
  }

  /** Records and entries held, and rows written since this instance started. */
  stats(): { records: number; entries: number; rows_written: number } {
    if (!this.hasSchema) return { records: 0, entries: 0, rows_written: this.rowsWritten };
    const records = this.exec<{ n: number }>("SELECT COUNT(*) AS n FROM records").one().n;
    const entries = this.exec<{ n: number }>("SELECT COUNT(*) AS n FROM entries").one().n;
    return { records, entries, rows_written: this.rowsWritten };
  }
}
