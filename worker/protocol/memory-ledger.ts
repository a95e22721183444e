/**
 * An in-memory ReplayLedger with the IssuerLedger's semantics, for offline use (CLI, tests
 * under plain Node). Not durable: a process restart forgets every nonce.
 */
import { judgeReplay, KEY_USES_PAGE, maxHighest, SEQUENCE_RESETS_PAGE, WITHDRAW_PAGE, type KeyUse, type Withdrawal, type ClaimQuery, type LedgerAdmin, type LedgerAnswer, type LedgerQuery, type ReplayLedger, type Revocation, type SequenceReset } from "./ledger.js";
import { EMPTY_WINDOW, type SequenceWindow } from "./replay-window.js";

export function memoryLedger(): ReplayLedger & LedgerAdmin & { nonces(): number } {
  const nonces = new Map<string, { retainUntil: number; fingerprint: string | null; sequence: number | null; retryTag: string | null; answer: string | null; withdrawn?: number }>();
  const revoked = new Map<string, Revocation>();
  const windows = new Map<string, SequenceWindow>();
  /** Each reset with its rowid (its place in recording order, from 1), as the IssuerLedger's table numbers them. */
  const resets: { rowid: number; reset: SequenceReset }[] = [];
  const uses = new Map<string, Map<string, KeyUse>>();
  const sequenceHeld = (fingerprint: string, sequence: number) => {
    for (const n of nonces.values()) if (n.fingerprint === fingerprint && n.sequence === sequence) return true;
    return false;
  };
  const judge = (q: LedgerQuery & { retryTag?: string | null }) =>
    judgeReplay(q, {
      nonceSeen: nonces.has(q.nonce),
      sameRetry: q.retryTag != null && nonces.get(q.nonce)?.retryTag === q.retryTag,
      answer: nonces.get(q.nonce)?.answer ?? null,
      withdrawnAt: nonces.get(q.nonce)?.withdrawn ?? null,
      keyRevoked: q.fingerprint !== null && revoked.has(q.fingerprint),
      sequenceRepeated: q.fingerprint !== null && q.sequence !== null && sequenceHeld(q.fingerprint, q.sequence),
      window: (q.fingerprint !== null && windows.get(q.fingerprint)) || EMPTY_WINDOW,
    });
  const forget = (fingerprint: string): number | null => {
    let highest: number | null = windows.get(fingerprint)?.highest ?? null;
    windows.delete(fingerprint);
    for (const n of nonces.values()) {
      if (n.fingerprint !== fingerprint) continue;
      highest = maxHighest(highest, n.sequence);
      n.fingerprint = null;
      n.sequence = null;
    }
    return highest;
  };
  return {
    async claim(q: ClaimQuery): Promise<LedgerAnswer> {
      const { answer, admitted, next } = judge(q);
      if (!admitted) return answer;
      const noted = q.fingerprint !== null && q.sequence !== null;
      nonces.set(q.nonce, { retainUntil: q.retainUntil, fingerprint: noted ? q.fingerprint : null, sequence: noted ? q.sequence : null, retryTag: q.retryTag, answer: q.retryTag !== null ? (q.answer ?? null) : null });
      if (next && q.fingerprint !== null) windows.set(q.fingerprint, next);
      return { ...answer, consumed: true };
    },
    async inspect(q: LedgerQuery): Promise<LedgerAnswer> {
      return judge(q).answer;
    },
    revoke(fingerprint, kid, at) {
      if (!revoked.has(fingerprint)) revoked.set(fingerprint, { fingerprint, kid, revoked_at: at });
      forget(fingerprint);
      return revoked.get(fingerprint)!;
    },
    revocations: () => [...revoked.values()].sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1)),
    forgetKey: (fingerprint) => void forget(fingerprint),
    resetSequence(fingerprint, audit) {
      const previous = forget(fingerprint);
      if (!audit) return { previous_highest: previous };
      const { highest_elsewhere, ...entry } = audit;
      const previous_highest = maxHighest(previous, highest_elsewhere);
      resets.push({ rowid: resets.length + 1, reset: { ...entry, previous_highest } });
      return { previous_highest };
    },
    sequenceResets(before) {
      const older = resets
        .filter((r) => before === null || r.reset.at < before.at || (r.reset.at === before.at && r.rowid < before.rowid))
        .sort((a, b) => a.reset.at - b.reset.at || a.rowid - b.rowid);
      const page = older.slice(-SEQUENCE_RESETS_PAGE);
      const next = older.length > page.length ? { at: page[0].reset.at, rowid: page[0].rowid } : null;
      return { resets: page.map((r) => r.reset), total: resets.length, next };
    },
    noteKeyUse(fingerprint, use) {
      if (revoked.has(fingerprint)) return { revoked: true };
      let held = uses.get(fingerprint);
      if (!held) uses.set(fingerprint, (held = new Map()));
      if (!held.has(`${use.kind}\n${use.ref}`)) held.set(`${use.kind}\n${use.ref}`, use);
      return { revoked: false };
    },
    keyUses: (fingerprint, after) =>
      [...(uses.get(fingerprint)?.values() ?? [])].sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0)).filter((u) => after === null || u.ref > after).slice(0, KEY_USES_PAGE),
    withdraw(withdrawals: Withdrawal[]) {
      if (withdrawals.length > WITHDRAW_PAGE) throw new Error(`withdraw takes at most ${WITHDRAW_PAGE} nonces`);
      let written = 0;
      for (const w of withdrawals) {
        if (nonces.has(w.nonce)) continue;
        nonces.set(w.nonce, { retainUntil: w.retainUntil, fingerprint: null, sequence: null, retryTag: null, answer: null, withdrawn: w.revokedAt });
        written++;
      }
      return written;
    },
    nonces: () => nonces.size,
  };
}
