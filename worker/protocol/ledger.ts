/**
 * The replay-state port of step 3 (revocation) and step 4 (nonce, sequence). The Worker's
 * adapter is the IssuerLedger Durable Object; tests and the CLI may supply their own.
 */
import type { FailureCode } from "./codes.js";
import { admitSequence, type SequenceWindow } from "./replay-window.js";

export interface LedgerQuery {
  issuer: string;
  nonce: string;
  sequence: number;
  /** The pinned key the signature verified under; null when it did not verify. */
  kid: string | null;
}

export interface ClaimQuery extends LedgerQuery {
  /** Unix seconds until which the nonce must be remembered: expires_at + granted skew. */
  retainUntil: number;
  /** Warning codes of this decision, counted with it. */
  warnings: FailureCode[];
}

export interface LedgerAnswer {
  revoked: boolean;
  /** Why this is a replay (nonce seen, sequence repeated or too old), or null. */
  replay: string | null;
  /** True only when this call claimed the nonce and advanced the window. */
  consumed: boolean;
}

export interface ReplayLedger {
  /** Atomically: refuse a revoked kid, claim the nonce, admit the sequence; all or nothing. */
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  /** The same checks, read-only. */
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
}

/** The ledger's decision for one query, given what it holds; `next` is the window to store on a claim. */
export function judgeReplay(
  q: LedgerQuery,
  held: { nonceSeen: boolean; kidRevoked: boolean; window: SequenceWindow },
): { answer: LedgerAnswer; next: SequenceWindow | null } {
  const seq = admitSequence(held.window, q.sequence);
  const replay = held.nonceSeen ? `nonce ${q.nonce} was already presented` : seq.kind === "fresh" ? null : seq.detail;
  return { answer: { revoked: held.kidRevoked, replay, consumed: false }, next: seq.kind === "fresh" ? seq.next : null };
}

/** FNV-1a, 32 bits: a cheap, stable spread of nonces over shards (not a security boundary). */
function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * The IssuerLedger holding `nonce` of `issuer`: the issuer itself when it has one shard,
 * else `issuer#k` with k = fnv1a32(nonce) mod shards. A nonce always maps to the same shard.
 */
export function ledgerName(issuer: string, nonce: string, shards: number): string {
  return shards <= 1 ? issuer : `${issuer}#${fnv1a32(nonce) % shards}`;
}

/** Every IssuerLedger of an issuer: revocations are written to all of them. */
export function ledgerNames(issuer: string, shards: number): string[] {
  return shards <= 1 ? [issuer] : Array.from({ length: shards }, (_, k) => `${issuer}#${k}`);
}
