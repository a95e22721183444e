/**
 * The journal port over ReceiptJournal Durable Objects. A tenant's records are spread over a fixed
 * number of shards by record id (a record id is a digest of its idempotency key, so the shard of a
 * trace is known without a lookup); each call goes to exactly one shard, bounded by the dependency
 * timeout, and a failure surfaces as VerifierUnavailable (503). Queries fan out to every shard and
 * merge their pages in (created_at, record_id) order.
 */
import type { Invalid, ReceiptJournal } from "../durable-objects/receipt-journal.js";
import type { Env } from "./env.js";
import { withTimeout } from "./http.js";
import { checkIdempotencyKey, JournalInputError, prepareTransition, recordIdOf } from "./protocol/journal/core.js";
import type { JournalEntry, JournalQuery, JournalRecord, LoadResult, ReconciliationMark, RecordSummary, ReservationResult, ToolReceiptJournal } from "./protocol/journal/port.js";

/** The tenant of the records intake writes: this deployment's own CCS evidence store. */
export const INTAKE_TENANT = "ccs";
/** The tenant of a relying party driving its own lifecycle through /v1/journal. */
export const partyTenant = (name: string): string => `rp:${name}`;

export const shardOf = (recordId: string, shards: number): number => parseInt(recordId.slice(0, 8), 16) % shards;
export const journalObjectName = (tenant: string, recordId: string, shards: number): string => `${tenant}#${shardOf(recordId, shards)}`;

/** The RPC surface of a ReceiptJournal, so tests and the Node environment can stand in for it. */
export type JournalStub = Pick<ReceiptJournal, "reserve" | "append" | "appendMany" | "claim" | "verifyFence" | "load" | "loadByIdempotency" | "reservation" | "query" | "stats" | "revokeKey" | "marksFor" | "markOf" | "delegatedReceipts">;

export interface JournalClient {
  port: { [K in keyof ToolReceiptJournal]: (...args: Parameters<ToolReceiptJournal[K]>) => Promise<Awaited<ReturnType<ToolReceiptJournal[K]>>> };
  /** One page over every shard, and the position to resume after when more remain. */
  query(q: JournalQuery): Promise<{ records: RecordSummary[]; next: { created_at: number; record_id: string } | null }>;
  /** CCS §14 over every shard: marks the records in flight under a revoked key; answers all it marked. */
  /** `grace`: the most skew a start grants an admission past its expires_at (the policy's skew cap). */
  revokeKey(fingerprint: string, revokedAt: number, at: number, grace: number): Promise<ReconciliationMark[]>;
  marksFor(fingerprint: string): Promise<ReconciliationMark[]>;
  /** CCS §14 over every shard: the receipts of the records marked via a delegation resting on `fingerprint`. */
  delegatedReceipts(fingerprint: string): Promise<{ issuer: string; nonce: string; expires_at: number; max_clock_skew: number | null }[]>;
  /** A record's reconciliation mark, from its own shard. */
  markOf(recordId: string): Promise<ReconciliationMark | null>;
  /** A record's reservation (that it exists, what it reserved), read without replaying its history: one shard, a few entries. */
  reservation(recordId: string): Promise<ReservationResult>;
}

function unwrap<T extends { kind: string }>(result: T | Invalid): Exclude<T, Invalid> {
  if (result.kind === "invalid") throw new JournalInputError((result as Invalid).code, (result as Invalid).detail);
  return result as Exclude<T, Invalid>;
}

export const durableJournalStub = (env: Env) => (name: string): JournalStub => env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(name)) as unknown as JournalStub;

export function journalClient(stubFor: (name: string) => JournalStub, tenant: string, shards: number, timeoutMs: number): JournalClient {
  const stub = (recordId: string) => stubFor(journalObjectName(tenant, recordId, shards));
  const everyShard = <T>(work: (s: JournalStub) => T | Promise<T>) =>
    withTimeout(Promise.all(Array.from({ length: shards }, (_, i) => Promise.resolve(work(stubFor(`${tenant}#${i}`))))), timeoutMs, "receipt journal");
  const call = async <T extends { kind: string }>(work: Promise<T | Invalid> | T | Invalid) => unwrap(await withTimeout(Promise.resolve(work), timeoutMs, "receipt journal"));
  return {
    port: {
      // Inputs are checked here too, so a refusal never needs the round trip.
      reserve: (input) => call(stub(recordIdOf(checkIdempotencyKey(input.idempotency_key))).reserve(input)),
      append: (input) => (prepareTransition(input), call(stub(input.record_id).append(input))),
      appendMany: (input) => (input.transitions.forEach(prepareTransition), call(stub(input.record_id).appendMany(input))),
      claim: (input) => call(stub(input.record_id).claim(input)),
      verifyFence: (input) => call(stub(input.record_id).verifyFence(input)),
      load: (recordId) => call(stub(recordId).load(recordId)),
      loadByIdempotency: (key) => call(stub(recordIdOf(checkIdempotencyKey(key))).loadByIdempotency(key)),
    },
    revokeKey: async (fingerprint, revokedAt, at, grace) => (await everyShard((s) => s.revokeKey(fingerprint, revokedAt, at, grace))).flat(),
    marksFor: async (fingerprint) => (await everyShard((s) => s.marksFor(fingerprint))).flat(),
    delegatedReceipts: async (fingerprint) => (await everyShard((s) => s.delegatedReceipts(fingerprint))).flat(),
    markOf: (recordId) => withTimeout(Promise.resolve(stub(recordId).markOf(recordId)), timeoutMs, "receipt journal"),
    reservation: (recordId) => call(stub(recordId).reservation(recordId)),
    async query(q) {
      const pages = await withTimeout(
        Promise.all(Array.from({ length: shards }, (_, i) => Promise.resolve(stubFor(`${tenant}#${i}`).query(q)))),
        timeoutMs,
        "receipt journal",
      );
      const merged = pages.flatMap((p) => p.records).sort((a, b) => a.created_at - b.created_at || (a.record_id < b.record_id ? -1 : a.record_id > b.record_id ? 1 : 0));
      const records = merged.slice(0, q.limit);
      const more = merged.length > q.limit || pages.some((p) => p.more);
      const last = records[records.length - 1];
      return { records, next: more && last ? { created_at: last.created_at, record_id: last.record_id } : null };
    },
  };
}

/**
 * Whether an answer to the trace's challenge was recorded (CCS §4.7), as the journal says it — the
 * truth the challenge row's `answered` mark only repeats, and a mark that failed to write does not
 * undo: the record no longer waits on its deny, was not closed by the challenge's deadline (that
 * entry names `challenge_expired_at`), and an entry leaving awaiting_approval carried a receipt (an
 * answer's: the deadline's closure carries none).
 */
export function answeredByEvidence(loaded: LoadResult): boolean {
  if (loaded.kind !== "found") return false;
  const { record, history } = loaded;
  if (record.state === "awaiting_approval" && record.verdict === "deny") return false;
  if (history.some((e) => e.detail !== null && Object.hasOwn(e.detail, "challenge_expired_at"))) return false;
  return history.some((e) => e.from === "awaiting_approval" && e.receipt !== null);
}

/**
 * CCS §4.7: once a challenge's deadline has passed without its evidence, the deny stands. The
 * trace's record, which waited in `awaiting_approval` for that evidence, is closed as `denied`
 * (effect `not-started`, outcome `confirmed`; no new receipt: its latest receipt is the deny),
 * the entry dated at the deadline and naming it in its detail. A record that no longer waits is
 * left alone: `answered` when an answer's evidence moved it on (answeredByEvidence), else
 * `not-waiting` (closed already, or waiting on an escalation rather than a deny); a record that
 * changed under the call is read again (a few times at most). `onClosed` is handed the closure
 * this call wrote (a call that closes it exports its tool execution event; the alarm does not).
 */
export async function closeExpiredChallenge(
  journal: JournalClient["port"],
  traceId: string,
  expiresAt: number,
  onClosed?: (record: JournalRecord, entries: readonly JournalEntry[]) => void,
): Promise<"closed" | "answered" | "not-waiting" | "not-found"> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const loaded = await journal.loadByIdempotency(traceId);
    if (loaded.kind === "not-found") return "not-found";
    if (loaded.kind === "corrupt") throw new Error(`journal record of ${traceId} refused: ${loaded.reason}`);
    const { record } = loaded;
    if (record.state !== "awaiting_approval" || record.verdict !== "deny") return answeredByEvidence(loaded) ? "answered" : "not-waiting";
    const appended = await journal.append({
      record_id: record.record_id,
      expected_revision: record.revision,
      at: expiresAt,
      to: "denied",
      effect: "not-started",
      detail: { challenge_expired_at: expiresAt },
    });
    if (appended.kind === "appended") {
      onClosed?.(appended.record, appended.entries);
      return "closed";
    }
    if (appended.kind !== "revision-conflict") throw new Error(`journal refused closing the expired challenge of ${traceId}: ${appended.kind}`);
  }
  throw new Error(`the journal record of ${traceId} kept changing while its expired challenge was being closed`);
}

/**
 * Why a record was marked for reconciliation (CCS §14), for an answer's detail: the admission's own
 * key was revoked, or a key its delegation rests on. `delegatedUnder` (the admission's
 * `detail.delegated_under`, the parent's signer first) tells the parent's own key from one further
 * up: a grandchild's parent may be signed under a key that is still trusted.
 */
export const markCause = (mark: Pick<ReconciliationMark, "via" | "revoked_at" | "fingerprint">, delegatedUnder?: readonly string[]): string => {
  if (mark.via !== "delegation") return `was signed under a key revoked at ${mark.revoked_at}`;
  if (delegatedUnder?.[0] === mark.fingerprint) return `was delegated from a parent receipt signed under a key revoked at ${mark.revoked_at}`;
  const further = `was delegated from a parent receipt whose own delegation rests on a key revoked at ${mark.revoked_at} (one that signed a receipt further up its delegation)`;
  if (delegatedUnder && delegatedUnder.length > 0) return further;
  return `was delegated from a parent receipt signed under a key revoked at ${mark.revoked_at}, or from one whose own delegation rests on that key`;
};
