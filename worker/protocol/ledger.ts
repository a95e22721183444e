/**
 * The replay-state port of step 3 (revocation) and step 4 (nonce, sequence). The Worker's
 * adapter is the IssuerLedger Durable Object; tests and the CLI may supply their own.
 *
 * Replay state is kept per key (by fingerprint), never per issuer: one key's sequences say
 * nothing about another's, and revoking or unpinning a key drops its sequence state.
 */
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { admitSequence, type SequenceWindow } from "./replay-window.js";
import { utf8 } from "./encoding.js";

/**
 * How an issuer's `sequence` values are judged (anchor field `sequence_policy`). CCS §6.8 makes
 * the nonce the replay guarantee and the sequence "an additional ordering guarantee", so:
 * - `repeat` (default): a sequence already carried by a receipt of the same key whose nonce is
 *   still retained (until its `expires_at + skew`) is REPLAY_DETECTED. Nothing beyond the nonce
 *   rows is stored, and a sequence may come back once that earlier receipt's nonce is purged.
 * - `window`: `repeat`, plus the strict IPsec-style window per key: a sequence more than
 *   WINDOW_SIZE − 1 below the highest accepted for the key is REPLAY_DETECTED. For issuers that
 *   sign receipts for this verifier only, in order.
 */
export const SEQUENCE_POLICIES = ["repeat", "window"] as const;
export type SequencePolicy = (typeof SEQUENCE_POLICIES)[number];
export const DEFAULT_SEQUENCE_POLICY: SequencePolicy = "repeat";

export interface LedgerQuery {
  issuer: string;
  nonce: string;
  /** The receipt's sequence; null when it carries none (then no sequence check). */
  sequence: number | null;
  /** Fingerprint of the pinned key the signature verified under; null when it did not verify. */
  fingerprint: string | null;
  sequencePolicy: SequencePolicy;
}

export interface ClaimQuery extends LedgerQuery {
  /** Unix seconds until which the nonce must be remembered: expires_at + granted skew. */
  retainUntil: number;
  /**
   * The caller's retry tag (relying party, Idempotency-Key, receipt hash), or null. A claim of a
   * nonce already claimed under the same tag is the same call again: answered as consumed by it,
   * writing nothing, rather than as a replay.
   */
  retryTag: string | null;
  /** With a retry tag: the answer this call gives if its claim lands, kept to answer a retry. */
  answer?: string;
}

export interface LedgerAnswer {
  revoked: boolean;
  /** Why this is a replay (nonce seen, sequence repeated or too old), or null. */
  replay: string | null;
  /**
   * Why the ledger would not claim a nonce whose retention had already ended by its own clock
   * (its row could be purged at once, so a replay could not be told), or absent.
   */
  expired?: string;
  /**
   * Why the receipt carrying this nonce was withdrawn before it was presented (CCS §14: a key its
   * delegation rests on was revoked), or absent. Judged whatever the replay mode: never consumed.
   */
  withdrawn?: string;
  /** True only when this call claimed the nonce (and noted its sequence), or is a retry of the call that did. */
  consumed: boolean;
  /** True when `consumed` is owed to an earlier call with the same retry tag. */
  retried?: boolean;
  /** On a retry: the first call's answer, as it was given. */
  answer?: string;
}

export interface ReplayLedger {
  /** Atomically: refuse a revoked key, claim the nonce, admit the sequence; all or nothing. */
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  /** The same checks, read-only. */
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
}

/**
 * A receipt of this deployment's own withdrawn before it was presented (CCS §14): a child admitted
 * under a delegation whose parent's key (or a key further up) was revoked at `revokedAt`. Its nonce
 * is held as withdrawn until `retainUntil` (its expires_at + the skew it is granted), when a claim
 * of it would be refused as expired anyway.
 */
export interface Withdrawal {
  nonce: string;
  retainUntil: number;
  revokedAt: number;
}

/** The most withdrawals one ledger call takes; more go in further calls. */
export const WITHDRAW_PAGE = 500;

/** What a withdrawn nonce's claim answers. */
export const withdrawnDetail = (revokedAt: number): string =>
  `the receipt was withdrawn: a key its delegation rests on was revoked at ${revokedAt}`;

/** A revoked key of an issuer: by fingerprint, with the kid it was revoked under for people. */
export type Revocation = {
  fingerprint: string;
  kid: string;
  revoked_at: number;
};

/** The audit entry of an admin reset of one key's sequence state. */
export type SequenceReset = {
  fingerprint: string;
  kid: string;
  at: number;
  reason: string;
  by: "admin";
  /** The highest sequence held for the key before the reset (over every shard), or null. */
  previous_highest: number | null;
};

/** The most sequence resets one issuer view answers; older ones are reached through its cursor. */
export const SEQUENCE_RESETS_PAGE = 100;

/**
 * A position among an issuer's sequence resets, which are ordered by (at, rowid): rowid is the
 * order the ledger recorded them in, so resets recorded in the same second keep their order.
 */
export type SequenceResetCursor = { at: number; rowid: number };

/**
 * One page of an issuer's sequence resets: the newest SEQUENCE_RESETS_PAGE before `before` (all
 * of them when null), listed oldest first; `total` counts every reset the ledger holds; `next` is
 * the position of the oldest listed when older ones remain, else null.
 */
export type SequenceResetPage = { resets: SequenceReset[]; total: number; next: SequenceResetCursor | null };

/** The audit fields of a reset, before the ledger adds what it held. */
export type SequenceResetAudit = Omit<SequenceReset, "previous_highest"> & { highest_elsewhere: number | null };

/**
 * Evidence in flight that a key signed (CCS §14): a live chain holding a hop it signed. Noted on
 * the issuer's first ledger shard before the hop is appended, so a revocation of the key (which
 * that shard also records) finds every such chain without reading anything else.
 */
export interface KeyUse {
  kind: "chain";
  ref: string;
  at: number;
}

/** The most key uses one listing answers; the rest are reached by paging after the last ref. */
export const KEY_USES_PAGE = 1000;

/** The admin side of an issuer's ledger: the IssuerLedger Durable Object and the in-memory ledger both offer it. */
export interface LedgerAdmin {
  revoke(fingerprint: string, kid: string, at: number): Revocation;
  revocations(): Revocation[];
  /** Drops a key's sequence state (its window, the sequences noted on its retained nonces). */
  forgetKey(fingerprint: string): void;
  /** forgetKey, answering the highest sequence held before; with `audit`, also records the reset. */
  resetSequence(fingerprint: string, audit: SequenceResetAudit | null): { previous_highest: number | null };
  /** The newest SEQUENCE_RESETS_PAGE resets before `before` (or the newest of all), oldest first, with the total and the cursor to older ones. */
  sequenceResets(before: SequenceResetCursor | null): SequenceResetPage;
  /** Notes that `fingerprint` signed evidence held at `ref`, unless the key is revoked (then nothing is written). */
  noteKeyUse(fingerprint: string, use: KeyUse): { revoked: boolean };
  /** The uses noted for a key, in ref order, after `after`, at most KEY_USES_PAGE. */
  keyUses(fingerprint: string, after: string | null): KeyUse[];
  /** Holds each nonce as withdrawn, unless it is held already (claimed: then it stays as it is); answers how many it wrote. */
  withdraw(withdrawals: Withdrawal[]): number;
}

/** The highest of some sequences, null and -1 meaning "none held". */
export const maxHighest = (...values: (number | null)[]): number | null => {
  const known = values.filter((v): v is number => v !== null && v >= 0);
  return known.length > 0 ? Math.max(...known) : null;
};

/** What a ledger holds that bears on one query. */
export interface HeldState {
  nonceSeen: boolean;
  /** The nonce was claimed by a call with the query's (non-null) retry tag; `answer` is what that call answered. */
  sameRetry?: boolean;
  answer?: string | null;
  /** The nonce is held withdrawn (never claimed): the revocation time its withdrawal names. */
  withdrawnAt?: number | null;
  keyRevoked: boolean;
  /** A retained nonce of the same key carries the query's sequence. */
  sequenceRepeated: boolean;
  /** The key's window; read only under the `window` policy. */
  window: SequenceWindow;
}

/**
 * The ledger's decision for one query, given what it holds; `next` is the key's window to store
 * on a claim, or null when the window does not change (policy `repeat`, or no sequence).
 */
export function judgeReplay(q: LedgerQuery, held: HeldState): { answer: LedgerAnswer; admitted: boolean; next: SequenceWindow | null } {
  let replay: string | null = null;
  let next: SequenceWindow | null = null;
  if (held.nonceSeen && held.sameRetry) {
    const retried = !held.keyRevoked;
    return { answer: { revoked: held.keyRevoked, replay: null, consumed: retried, retried, ...(retried && held.answer ? { answer: held.answer } : {}) }, admitted: false, next: null };
  }
  if (held.nonceSeen && held.withdrawnAt != null) {
    return { answer: { revoked: held.keyRevoked, replay: null, withdrawn: withdrawnDetail(held.withdrawnAt), consumed: false }, admitted: false, next: null };
  }
  if (held.nonceSeen) replay = `nonce ${q.nonce} was already presented`;
  else if (q.sequence !== null && q.fingerprint !== null) {
    if (held.sequenceRepeated) replay = `sequence ${q.sequence} was already presented`;
    else if (q.sequencePolicy === "window") {
      const seq = admitSequence(held.window, q.sequence);
      if (seq.kind === "fresh") next = seq.next;
      else replay = seq.detail;
    }
  }
  const admitted = !held.keyRevoked && replay === null;
  return { answer: { revoked: held.keyRevoked, replay, consumed: false }, admitted, next: admitted ? next : null };
}

/**
 * A compact tag of a key for the nonce rows: the first 52 bits of its fingerprint, as an
 * integer (SQLite stores it in 8 bytes rather than 64 characters). Two keys of one issuer
 * sharing a tag would only share sequence checks (more refusals, never fewer).
 */
export const keyTag = (fingerprint: string): number => parseInt(fingerprint.slice(0, 13), 16);

/** Shortest accepted LEDGER_SHARD_KEY, in characters (UTF-8 bytes are used as the HMAC key). */
export const MIN_SHARD_KEY_LENGTH = 32;

/**
 * The IssuerLedger holding `nonce` of `issuer`: the issuer itself when it has one shard, else
 * `issuer#k` with k = HMAC-SHA256(shardKey, nonce) mod shards. A nonce always maps to the same
 * shard; without the deployment's secret key nobody can aim nonces at one shard.
 */
export function ledgerName(issuer: string, nonce: string, shards: number, shardKey: Uint8Array): string {
  if (shards <= 1) return issuer;
  const mac = hmac(sha256, shardKey, utf8(nonce));
  const k = ((mac[0] << 24) | (mac[1] << 16) | (mac[2] << 8) | mac[3]) >>> 0;
  return `${issuer}#${k % shards}`;
}

/** Every IssuerLedger of an issuer: revocations and sequence resets are written to all of them. */
export function ledgerNames(issuer: string, shards: number): string[] {
  return shards <= 1 ? [issuer] : Array.from({ length: shards }, (_, k) => `${issuer}#${k}`);
}
