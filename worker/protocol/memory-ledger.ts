/**
 * An in-memory ReplayLedger with the IssuerLedger's semantics, for offline use (CLI, tests
 * under plain Node). Not durable: a process restart forgets every nonce.
 */
import { judgeReplay, type ClaimQuery, type LedgerAnswer, type LedgerQuery, type ReplayLedger } from "./ledger.js";
import { EMPTY_WINDOW, type SequenceWindow } from "./replay-window.js";

export function memoryLedger(): ReplayLedger & { revoke(kid: string): void; revokedKids(): string[]; nonces(): number } {
  const nonces = new Map<string, number>();
  const revoked = new Set<string>();
  let window: SequenceWindow = EMPTY_WINDOW;
  const judge = (q: LedgerQuery) =>
    judgeReplay(q, { nonceSeen: nonces.has(q.nonce), kidRevoked: q.kid !== null && revoked.has(q.kid), window });
  return {
    async claim(q: ClaimQuery): Promise<LedgerAnswer> {
      const { answer, next } = judge(q);
      if (answer.revoked || answer.replay || !next) return answer;
      nonces.set(q.nonce, q.retainUntil);
      window = next;
      return { ...answer, consumed: true };
    },
    async inspect(q: LedgerQuery): Promise<LedgerAnswer> {
      return judge(q).answer;
    },
    revoke: (kid) => void revoked.add(kid),
    revokedKids: () => [...revoked],
    nonces: () => nonces.size,
  };
}
