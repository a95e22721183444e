/**
 * IssuerLedger: the replay state of one issuer (or of one shard of a hot issuer), kept per key.
 * Each decision is one RPC whose reads and writes run in one synchronous SQLite transaction:
 * refuse a revoked key, claim the nonce, admit the sequence. A refused decision writes nothing;
 * an accepted claim writes one row, the nonce, carrying its key's tag and its sequence, and no
 * index entry (the table has no secondary index). Only a key's first claim under
 * `sequence_policy: "window"` also writes the key's window row. Decisions are counted elsewhere
 * (DecisionStats, batched), so attacker traffic buys no write here.
 *
 * A nonce is kept until its receipt's `expires_at + skew`, up to lifetime + 2 × skew after its
 * claim (a receipt may be issued up to the skew ahead of the verifier's clock); an alarm purges
 * what has passed, so the table holds at most rate × (lifetime + 2 × skew + PURGE_INTERVAL) rows. The sequences noted on
 * the nonce rows live exactly as long: under the default policy "a sequence already used" means
 * "used by a receipt of the same key whose nonce is still retained". Those sequences are held in
 * memory by key tag, read from the nonce rows once per instance at first need, and changed only
 * after the transaction that changed the rows committed (claim, purge, forget). The object is
 * single-threaded and a transaction here is synchronous, so nothing runs between the check and
 * the insert: the check is as strong as the unique index on (key_tag, sequence) it replaces,
 * without that index's second B-tree entry per claim. Memory: one Set entry per retained keyed
 * nonce, so at most rate × (lifetime + 2 × skew + PURGE_INTERVAL) entries, about 21–40 bytes each
 * for sequences below 2^31 and 37–56 above (measured in Node 20's V8, 64-bit pointers; an
 * estimate for workerd): at 1,000 claims/s, a 300 s lifetime, the 30 s skew cap and the 30 s
 * purge interval, 390,000 entries, at most ~22 MB.
 *
 * A key's strict window (policy "window") is held in memory too. Its row is written at the key's
 * first window claim (that row is how a purge finds the key) and rewritten from memory only
 * before nonce rows lose their sequences, by the purge and by forget. A nonce row notes whether
 * its claim entered the window (`windowed`: 1, else NULL; a record-header byte, no payload), so
 * a key's claims under "repeat" stay out of it. A new instance rebuilds a window as its row
 * merged with the windowed sequences still on the key's nonce rows: every sequence admitted since
 * the row was last written is on such a row, as only the purge and forget take sequences off rows
 * and both write the windows first. A window is a function of the set of sequences it admitted
 * (the highest, and those less than WINDOW_SIZE below it), so the merge is the window as it was
 * (two keys sharing a tag would only refuse more, as everywhere with keyTag). A window that
 * changed costs one row write at the next purge.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import {
  judgeReplay,
  KEY_USES_PAGE,
  keyTag,
  type KeyUse,
  maxHighest,
  type ClaimQuery,
  type LedgerAdmin,
  type LedgerAnswer,
  type LedgerQuery,
  type Revocation,
  type SequenceReset,
  SEQUENCE_RESETS_PAGE,
  type SequenceResetCursor,
  type SequenceResetPage,
  type SequenceResetAudit,
  WITHDRAW_PAGE,
  type Withdrawal,
} from "../worker/protocol/ledger.js";
import { admitSequence, decodeBitmap, encodeBitmap, EMPTY_WINDOW, type SequenceWindow } from "../worker/protocol/replay-window.js";

/** The most keys one forgetKeys call drops: every key an anchor holds (kv-schemas/anchor.schema.json keys.maxItems). */
const MAX_FORGET_KEYS = 16;

/** Purges are batched: an alarm never fires sooner than this after the previous one. */
export const PURGE_INTERVAL_MS = 30_000;

export type { Revocation, SequenceReset };

export interface LedgerStats {
  nonces: number;
  /** Size of this object's SQLite database, bytes (free pages included). */
  database_bytes: number;
  /** Rows written by claims since this instance started (SQLite's own count, index entries included). */
  rows_written: number;
  /** The strict windows held (keys of `sequence_policy: "window"` anchors). */
  windows: { fingerprint: string; highest: number }[];
  revoked: Revocation[];
}

/** What the public anchor view shows of the ledger: revoked keys and one page of the audited sequence resets. */
export interface AnchorLedgerState {
  revoked: Revocation[];
  sequence_resets: SequenceResetPage;
}

type ClaimedRow = { retry_tag: string | null; answer: string | null; withdrawn: number | null };

export class IssuerLedger extends DurableObject<Env> implements LedgerAdmin {
  private readonly sql: SqlStorage;
  /** Windows rebuilt so far, by fingerprint; an issuer has a handful of keys. */
  private windows = new Map<string, SequenceWindow>();
  /** Fingerprints whose window in memory is ahead of its row. */
  private unsaved = new Set<string>();
  /**
   * The sequences on retained nonce rows, by key tag; null until first needed. A (tag, sequence)
   * is on one retained row at most (a claim refuses a repeat), so a purged row's leaves the Set.
   */
  private heldSequences: Map<number, Set<number>> | null = null;
  private revoked: Set<string>;
  private alarmAt: number | null = null;
  private rowsWritten = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    // No index on retain_until: every claim would pay for it, while the purge that would use it
    // runs at most every PURGE_INTERVAL_MS over a table bounded by rate × retention. No index on
    // (key_tag, sequence) either: those sequences are held in memory (see above).
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS nonces (nonce TEXT PRIMARY KEY, retain_until REAL NOT NULL, key_tag INTEGER, sequence INTEGER, retry_tag TEXT, answer TEXT, windowed INTEGER, withdrawn REAL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS windows (fingerprint TEXT PRIMARY KEY, highest INTEGER NOT NULL, bitmap TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS revoked_keys (fingerprint TEXT PRIMARY KEY, kid TEXT NOT NULL, revoked_at REAL NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS key_uses (fingerprint TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (fingerprint, kind, ref)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS sequence_resets (at REAL NOT NULL, fingerprint TEXT NOT NULL, kid TEXT NOT NULL, reason TEXT NOT NULL, by TEXT NOT NULL, previous_highest INTEGER);
      CREATE INDEX IF NOT EXISTS sequence_resets_at ON sequence_resets (at);
      DROP TABLE IF EXISTS state;
    `);
    // Ledgers created before sequences were kept per key gain the two columns of the nonce row.
    const columns = new Set(this.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('nonces')").toArray().map((c) => c.name));
    if (!columns.has("key_tag")) this.sql.exec("ALTER TABLE nonces ADD COLUMN key_tag INTEGER; ALTER TABLE nonces ADD COLUMN sequence INTEGER");
    if (!columns.has("retry_tag")) this.sql.exec("ALTER TABLE nonces ADD COLUMN retry_tag TEXT");
    if (!columns.has("answer")) this.sql.exec("ALTER TABLE nonces ADD COLUMN answer TEXT");
    // Rows from before have no `windowed`: their claims rewrote the window row, which is current.
    if (!columns.has("windowed")) this.sql.exec("ALTER TABLE nonces ADD COLUMN windowed INTEGER");
    // A receipt withdrawn before it was presented (CCS §14, withdraw below): the revocation's time; NULL on a claimed row.
    if (!columns.has("withdrawn")) this.sql.exec("ALTER TABLE nonces ADD COLUMN withdrawn REAL");
    this.sql.exec("DROP INDEX IF EXISTS nonce_sequences");
    this.revoked = new Set(this.sql.exec<{ fingerprint: string }>("SELECT fingerprint FROM revoked_keys").toArray().map((r) => r.fingerprint));
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
    });
  }

  /** The key's window: at first need, its row merged with the windowed sequences on its retained nonce rows. */
  private windowOf(fingerprint: string): SequenceWindow {
    let window = this.windows.get(fingerprint);
    if (window) return window;
    const row = this.sql.exec<{ highest: number; bitmap: string }>("SELECT highest, bitmap FROM windows WHERE fingerprint = ?", fingerprint).toArray()[0];
    const saved = row ? { highest: row.highest, bitmap: decodeBitmap(row.bitmap) } : EMPTY_WINDOW;
    window = saved;
    for (const { sequence } of this.sql.exec<{ sequence: number }>("SELECT sequence FROM nonces WHERE key_tag = ? AND windowed = 1", keyTag(fingerprint))) {
      const merged = admitSequence(window, sequence);
      if (merged.kind === "fresh") window = merged.next;
    }
    if (window !== saved) this.unsaved.add(fingerprint);
    this.windows.set(fingerprint, window);
    return window;
  }

  /** Writes every window ahead of its row (rebuilding those not yet in memory); answers the fingerprints written. */
  private saveWindows(): string[] {
    for (const { fingerprint } of this.sql.exec<{ fingerprint: string }>("SELECT fingerprint FROM windows").toArray()) this.windowOf(fingerprint);
    const written = [...this.unsaved];
    for (const fingerprint of written) {
      const window = this.windowOf(fingerprint);
      this.sql.exec(
        "INSERT INTO windows (fingerprint, highest, bitmap) VALUES (?, ?, ?) ON CONFLICT (fingerprint) DO UPDATE SET highest = excluded.highest, bitmap = excluded.bitmap",
        fingerprint,
        window.highest,
        encodeBitmap(window.bitmap),
      );
    }
    return written;
  }

  private sequences(): Map<number, Set<number>> {
    if (this.heldSequences) return this.heldSequences;
    const held = new Map<number, Set<number>>();
    for (const { key_tag, sequence } of this.sql.exec<{ key_tag: number; sequence: number }>("SELECT key_tag, sequence FROM nonces WHERE sequence IS NOT NULL")) {
      noteSequence(held, key_tag, sequence);
    }
    return (this.heldSequences = held);
  }

  /** The row of a nonce claimed before (its retry tag and kept answer), or undefined. */
  private claimedRow(nonce: string): ClaimedRow | undefined {
    return this.sql.exec<ClaimedRow>("SELECT retry_tag, answer, withdrawn FROM nonces WHERE nonce = ?", nonce).toArray()[0];
  }

  /** The ledger's decision given the nonce's row (`undefined`: never claimed) and what memory holds. */
  private judge(q: LedgerQuery & { retryTag?: string | null }, claimed: ClaimedRow | undefined) {
    const keyed = q.fingerprint !== null && q.sequence !== null;
    return judgeReplay(q, {
      nonceSeen: claimed !== undefined,
      sameRetry: claimed !== undefined && q.retryTag != null && claimed.retry_tag === q.retryTag,
      answer: claimed?.answer ?? null,
      withdrawnAt: claimed?.withdrawn ?? null,
      keyRevoked: q.fingerprint !== null && this.revoked.has(q.fingerprint),
      sequenceRepeated: keyed && this.sequences().get(keyTag(q.fingerprint!))?.has(q.sequence!) === true,
      window: keyed && q.sequencePolicy === "window" ? this.windowOf(q.fingerprint!) : EMPTY_WINDOW,
    });
  }

  /** A key's first window claim also writes its window row, by which a purge finds the window to save. */
  private firstWindowClaim(q: LedgerQuery, next: SequenceWindow | null): boolean {
    return next !== null && this.windowOf(q.fingerprint!).highest < 0;
  }

  /** Inserts the nonce row; answers the rows written (0 when `ifNew` and the nonce was already there). */
  private insertNonce(q: ClaimQuery, windowed: boolean, ifNew: boolean): number {
    const noted = q.fingerprint !== null && q.sequence !== null;
    const inserted = this.sql.exec(
      `INSERT INTO nonces (nonce, retain_until, key_tag, sequence, retry_tag, answer, windowed) VALUES (?, ?, ?, ?, ?, ?, ?)${ifNew ? " ON CONFLICT (nonce) DO NOTHING" : ""}`,
      q.nonce,
      q.retainUntil,
      noted ? keyTag(q.fingerprint!) : null,
      noted ? q.sequence : null,
      q.retryTag,
      q.retryTag !== null ? (q.answer ?? null) : null,
      windowed ? 1 : null,
    );
    inserted.toArray();
    this.rowsWritten += inserted.rowsWritten;
    return inserted.rowsWritten;
  }

  claim(q: ClaimQuery): LedgerAnswer {
    // A nonce is claimed only while its retention runs by this object's clock, the one its purge
    // uses: a row admitted now cannot be purged before retain_until, so every replay up to then
    // finds it, and after then none is admitted. The verifier judged freshness by its own clock; at
    // the boundary, or with that clock behind this one, the receipt is refused here rather than
    // claimed unguarded.
    if (q.retainUntil * 1000 <= Date.now()) {
      return { revoked: false, replay: null, consumed: false, expired: `the issuer ledger's clock is past this receipt's retention (expires_at + skew = ${q.retainUntil}); its nonce can no longer be guarded` };
    }
    // What memory alone decides (a revoked key, a repeated sequence, the window) is judged first,
    // as if the nonce were new. A claim admitted so, with no window row to create, is one INSERT
    // that does nothing on a nonce already there: a single statement is atomic by itself, so the
    // accepting path reads nothing and opens no transaction. A nonce already there (a replay, or a
    // retry) and everything memory refuses are judged in full, in one transaction.
    const optimistic = this.judge(q, undefined);
    if (optimistic.admitted && !this.firstWindowClaim(q, optimistic.next) && this.insertNonce(q, optimistic.next !== null, true) > 0) {
      return this.admitted(q, optimistic.next, false, optimistic.answer);
    }
    const { judged, saved } = this.ctx.storage.transactionSync(() => {
      const judged = this.judge(q, this.claimedRow(q.nonce));
      if (!judged.admitted) return { judged, saved: false };
      const first = this.firstWindowClaim(q, judged.next);
      this.insertNonce(q, judged.next !== null, false);
      if (first) {
        const stored = this.sql.exec("INSERT INTO windows (fingerprint, highest, bitmap) VALUES (?, ?, ?)", q.fingerprint, judged.next!.highest, encodeBitmap(judged.next!.bitmap));
        stored.toArray();
        this.rowsWritten += stored.rowsWritten;
      }
      return { judged, saved: first };
    });
    return judged.admitted ? this.admitted(q, judged.next, saved, judged.answer) : judged.answer;
  }

  /** Memory follows the database once the claim's writes committed: the sequence, the window, the purge. */
  private admitted(q: ClaimQuery, next: SequenceWindow | null, saved: boolean, answer: LedgerAnswer): LedgerAnswer {
    if (q.fingerprint !== null && q.sequence !== null) noteSequence(this.sequences(), keyTag(q.fingerprint), q.sequence);
    if (next) {
      this.windows.set(q.fingerprint!, next);
      if (!saved) this.unsaved.add(q.fingerprint!);
    }
    this.schedulePurge(q.retainUntil * 1000);
    return { ...answer, consumed: true };
  }

  inspect(q: LedgerQuery): LedgerAnswer {
    return this.judge(q, this.claimedRow(q.nonce)).answer;
  }

  /**
   * In one transaction, drops the key's window and the sequences noted on its nonces (the nonces
   * stay claimed), then runs `write` with the highest sequence held; memory follows once committed.
   */
  private forget<T>(fingerprint: string, write: (highest: number | null) => T): T {
    const tag = keyTag(fingerprint);
    const { written, result } = this.ctx.storage.transactionSync(() => {
      // Another key may share the tag (keyTag): its window is saved before its rows lose their sequences.
      const written = this.saveWindows();
      const noted = this.sql.exec<{ h: number | null }>("SELECT MAX(sequence) AS h FROM nonces WHERE key_tag = ?", tag).one().h;
      const highest = maxHighest(this.windowOf(fingerprint).highest, noted);
      this.sql.exec("DELETE FROM windows WHERE fingerprint = ?", fingerprint);
      this.sql.exec("UPDATE nonces SET key_tag = NULL, sequence = NULL WHERE key_tag = ?", tag);
      return { written, result: write(highest) };
    });
    for (const f of written) this.unsaved.delete(f);
    this.windows.delete(fingerprint);
    this.unsaved.delete(fingerprint);
    this.heldSequences?.delete(tag);
    return result;
  }

  /** Revokes a key for good, by fingerprint; its sequence state goes with it. Idempotent: the first revoked_at stays. */
  revoke(fingerprint: string, kid: string, at: number): Revocation {
    return this.forget(fingerprint, () => {
      this.sql.exec("INSERT INTO revoked_keys (fingerprint, kid, revoked_at) VALUES (?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING", fingerprint, kid, at);
      this.revoked.add(fingerprint);
      return this.sql.exec<Revocation>("SELECT fingerprint, kid, revoked_at FROM revoked_keys WHERE fingerprint = ?", fingerprint).one();
    });
  }

  revocations(): Revocation[] {
    return this.sql.exec<Revocation>("SELECT fingerprint, kid, revoked_at FROM revoked_keys ORDER BY fingerprint").toArray();
  }

  /** A key is no longer pinned: its sequence state is dropped (a later re-pin starts afresh). */
  forgetKey(fingerprint: string): void {
    this.forget(fingerprint, () => undefined);
  }

  /** forgetKey for each of the keys one pin unpinned (at most the 16 an anchor holds), in one call. */
  forgetKeys(fingerprints: string[]): void {
    if (!Array.isArray(fingerprints) || fingerprints.length > MAX_FORGET_KEYS) throw new Error(`forgetKeys takes at most ${MAX_FORGET_KEYS} fingerprints`);
    for (const fingerprint of new Set(fingerprints)) this.forget(fingerprint, () => undefined);
  }

  resetSequence(fingerprint: string, audit: SequenceResetAudit | null): { previous_highest: number | null } {
    return this.forget(fingerprint, (previous) => {
      if (!audit) return { previous_highest: previous };
      const previous_highest = maxHighest(previous, audit.highest_elsewhere);
      this.sql.exec(
        "INSERT INTO sequence_resets (at, fingerprint, kid, reason, by, previous_highest) VALUES (?, ?, ?, ?, ?, ?)",
        audit.at,
        fingerprint,
        audit.kid,
        audit.reason,
        audit.by,
        previous_highest,
      );
      return { previous_highest };
    });
  }

  /** A page of the audited resets, newest first from the (at) index (whose entries carry the rowid), answered oldest first. */
  sequenceResets(before: SequenceResetCursor | null): SequenceResetPage {
    const columns = "SELECT rowid, fingerprint, kid, at, reason, by, previous_highest FROM sequence_resets";
    const newest = (
      before === null
        ? this.sql.exec<SequenceReset & { rowid: number }>(`${columns} ORDER BY at DESC, rowid DESC LIMIT ?`, SEQUENCE_RESETS_PAGE + 1)
        : this.sql.exec<SequenceReset & { rowid: number }>(`${columns} WHERE (at, rowid) < (?, ?) ORDER BY at DESC, rowid DESC LIMIT ?`, before.at, before.rowid, SEQUENCE_RESETS_PAGE + 1)
    ).toArray();
    const page = newest.slice(0, SEQUENCE_RESETS_PAGE).reverse();
    const total = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM sequence_resets").one().n;
    const next = newest.length > SEQUENCE_RESETS_PAGE ? { at: page[0].at, rowid: page[0].rowid } : null;
    return { resets: page.map(({ rowid: _, ...reset }) => reset), total, next };
  }

  /**
   * Notes evidence in flight a key signed (a live chain's hop), in the transaction that also
   * judges the key revoked: a use noted before a revocation is found by it, one asked after it is
   * refused and writes nothing.
   */
  noteKeyUse(fingerprint: string, use: KeyUse): { revoked: boolean } {
    return this.ctx.storage.transactionSync(() => {
      if (this.revoked.has(fingerprint)) return { revoked: true };
      this.sql.exec("INSERT INTO key_uses (fingerprint, kind, ref, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", fingerprint, use.kind, use.ref, use.at);
      return { revoked: false };
    });
  }

  keyUses(fingerprint: string, after: string | null): KeyUse[] {
    return this.sql.exec<KeyUse & Record<string, SqlStorageValue>>("SELECT kind, ref, at FROM key_uses WHERE fingerprint = ? AND ref > ? ORDER BY ref LIMIT ?", fingerprint, after ?? "", KEY_USES_PAGE).toArray();
  }

  /**
   * CCS §14: receipts of this deployment's own withdrawn before they were presented (children of a
   * delegation whose parent's key was revoked). Each nonce not held yet is held as withdrawn until
   * its retention ends (then purged like any nonce); one already held (claimed: the receipt was
   * presented before the revocation) stays as it is. A later claim of a withdrawn nonce conflicts
   * on the accepting path's INSERT and is judged in full, which answers `withdrawn`. Answers the
   * rows written.
   */
  withdraw(withdrawals: Withdrawal[]): number {
    if (!Array.isArray(withdrawals) || withdrawals.length > WITHDRAW_PAGE) throw new Error(`withdraw takes at most ${WITHDRAW_PAGE} nonces`);
    const now = Date.now() / 1000;
    const due = withdrawals.filter((w) => typeof w.nonce === "string" && Number.isFinite(w.retainUntil) && Number.isFinite(w.revokedAt) && w.retainUntil > now);
    if (due.length === 0) return 0;
    const written = this.ctx.storage.transactionSync(() => {
      let n = 0;
      for (const w of due) {
        const cursor = this.sql.exec("INSERT INTO nonces (nonce, retain_until, withdrawn) VALUES (?, ?, ?) ON CONFLICT (nonce) DO NOTHING", w.nonce, w.retainUntil, w.revokedAt);
        cursor.toArray();
        n += cursor.rowsWritten;
      }
      return n;
    });
    this.rowsWritten += written;
    this.schedulePurge(Math.min(...due.map((w) => w.retainUntil)) * 1000);
    return written;
  }

  anchorState(before: SequenceResetCursor | null = null): AnchorLedgerState {
    return { revoked: this.revocations(), sequence_resets: this.sequenceResets(before) };
  }

  stats(): LedgerStats {
    const nonces = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM nonces").one().n;
    const windows = this.sql
      .exec<{ fingerprint: string }>("SELECT fingerprint FROM windows ORDER BY fingerprint")
      .toArray()
      .map(({ fingerprint }) => ({ fingerprint, highest: this.windowOf(fingerprint).highest }));
    return { nonces, database_bytes: this.sql.databaseSize, rows_written: this.rowsWritten, windows, revoked: this.revocations() };
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

  /** Deletes the nonces whose retention passed, in the transaction that first saves the windows; answers how many. */
  purge(nowMs: number): number {
    const { written, purged } = this.ctx.storage.transactionSync(() => ({
      written: this.saveWindows(),
      purged: this.sql.exec<{ key_tag: number | null; sequence: number | null }>("DELETE FROM nonces WHERE retain_until <= ? RETURNING key_tag, sequence", nowMs / 1000).toArray(),
    }));
    for (const f of written) this.unsaved.delete(f);
    for (const { key_tag, sequence } of purged) if (key_tag !== null && sequence !== null) this.heldSequences?.get(key_tag)?.delete(sequence);
    return purged.length;
  }
}

function noteSequence(held: Map<number, Set<number>>, tag: number, sequence: number): void {
  let sequences = held.get(tag);
  if (!sequences) held.set(tag, (sequences = new Set()));
  sequences.add(sequence);
}
