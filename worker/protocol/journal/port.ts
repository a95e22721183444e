/**
 * The ToolReceiptJournal port (llm-core `/evidence`): a storage-neutral interface over the
 * authoritative, append-derived record of one controlled tool execution. Adapters supply atomic
 * persistence (in memory for tests and the CLI, a Durable Object for the Worker); every
 * operation answers a discriminated union on `kind`, and an illegal transition is one of those
 * answers, never a thrown error.
 */
import type { JsonObject, JsonValue } from "../boundary.js";
import type { EffectDisposition, JournalState, OutcomeStatus } from "./lifecycle.js";

export type MaybePromise<T> = T | Promise<T>;

/** Why an entry was written: the reservation, a transition asked for, a claimed lease, a lease that lapsed. */
export type EntryEvent = "reserve" | "append" | "claim" | "lapse";

/** One durable step of a record's history. The record is whatever these, in order, add up to. */
export interface JournalEntry {
  /** 1 for the reservation, then one more per entry. */
  revision: number;
  /** Unix seconds, on the caller's clock. */
  at: number;
  event: EntryEvent;
  from: JournalState | null;
  to: JournalState;
  effect: EffectDisposition;
  /** The fence the entry was written under: the new one for a claim or a lapse, the holder's for an append, else null. */
  fence: number | null;
  /** For a claim: when its lease ends (caller's clock). */
  lease_until: number | null;
  /** A receipt issued with this step (the signed admission, the signed final receipt). */
  receipt: JsonObject | null;
  /** What the step records beyond its state: strict JSON, no authority fields. */
  detail: JsonObject | null;
  /** Namespaced provider extensions, credentials redacted. */
  extensions: JsonObject | null;
  /** SHA-256 (hex) of the previous entry's canonical JSON; "" for the first. */
  prev: string;
}

/** A record as its history derives it. */
export interface JournalRecord {
  record_id: string;
  idempotency_key: string;
  action_digest: string;
  /** What the reservation said the record is about (agent_id, tool, trace_id, action…). */
  attributes: JsonObject;
  state: JournalState;
  effect: EffectDisposition;
  revision: number;
  /** The highest fence token ever issued for this record (0: never claimed). */
  fence: number;
  /** The execution lease now held, if any. */
  lease: { fence: number; until: number } | null;
  /** The last lease lapsed without a result (outcome `unknown` while still started). */
  lease_lapsed: boolean;
  /** The verdict of the latest receipt recorded, if any. */
  verdict: string | null;
  outcome_status: OutcomeStatus | null;
  created_at: number;
  updated_at: number;
}

/**
 * A record admitted under a key since revoked, while it was still in flight (CCS §14): its
 * admission is no longer evidence, so it must not be started and its outcome must be reconciled.
 */
export interface ReconciliationMark {
  record_id: string;
  trace_id: string | null;
  /** The record's state now. */
  state: JournalState;
  fingerprint: string;
  revoked_at: number;
  marked_at: number;
  /** What the revoked key signed: the admission itself, or a parent receipt the admission was delegated from (or one further up its delegation). */
  via: "admission" | "delegation";
}

export interface LoadedRecord {
  record: JournalRecord;
  history: JournalEntry[];
}

export interface ReserveInput {
  idempotency_key: string;
  action_digest: string;
  at: number;
  attributes?: unknown;
}
export type ReserveResult =
  | { kind: "created"; record: JournalRecord }
  | { kind: "existing"; record: JournalRecord }
  | { kind: "conflict"; record_id: string; action_digest: string };

export interface Transition {
  to: JournalState;
  effect: EffectDisposition;
  receipt?: unknown;
  detail?: unknown;
  extensions?: unknown;
}
export interface AppendInput extends Transition {
  record_id: string;
  expected_revision: number;
  at: number;
  /** Required to leave (or stay in) `started` while a lease is held: the holder's fence. */
  fence?: number;
}
export type AppendResult =
  | { kind: "appended"; record: JournalRecord; entries: JournalEntry[] }
  | { kind: "revision-conflict"; expected: number; actual: number }
  | { kind: "not-found" }
  | { kind: "fence-conflict"; fence: number | null; current: number | null }
  | { kind: "illegal-transition"; from: JournalState; to: JournalState; effect: EffectDisposition; reason: string };

export interface AppendManyInput {
  record_id: string;
  expected_revision: number;
  at: number;
  fence?: number;
  transitions: Transition[];
}

export interface ClaimInput {
  record_id: string;
  /** When given, the claim is refused unless the record is still at this revision. */
  expected_revision?: number;
  at: number;
  lease_seconds: number;
}
export type ClaimResult =
  | { kind: "claimed"; record: JournalRecord; fence: number; lease_until: number }
  | { kind: "held"; lease_until: number }
  | { kind: "not-eligible"; state: JournalState; lease_lapsed: boolean }
  | { kind: "revision-conflict"; expected: number; actual: number }
  | { kind: "not-found" };

export interface VerifyFenceInput {
  record_id: string;
  fence: number;
  /** Unix seconds on the caller's clock: a lease whose `until` has passed holds no fence, lapse entry written or not. */
  at?: number;
}
export type VerifyFenceResult =
  | { kind: "valid"; record: JournalRecord }
  | { kind: "fence-conflict"; fence: number; current: number | null }
  | { kind: "not-found" };

/** A history that does not add up (reordered, altered, truncated) is refused, never reinterpreted. */
export type LoadResult = ({ kind: "found" } & LoadedRecord) | { kind: "not-found" } | { kind: "corrupt"; record_id: string; reason: string };

/** Results of every operation that reads a record may also be `corrupt`: the history behind it was refused. */
export type Corrupt = { kind: "corrupt"; record_id: string; reason: string };

/**
 * A record's reservation, read without replaying its history: what a reference to the record
 * needs (that it exists, what its reservation said). Only the entries that vouch for the
 * reservation and the index row are checked — the reservation itself, its successor's `prev`, the
 * latest entry against the row's head digest — not every link between them: a `load` checks those.
 */
export type ReservationResult =
  | { kind: "found"; record_id: string; idempotency_key: string; action_digest: string; attributes: JsonObject }
  | { kind: "not-found" }
  | Corrupt;

export interface ToolReceiptJournal {
  reserve(input: ReserveInput): MaybePromise<ReserveResult | Corrupt>;
  append(input: AppendInput): MaybePromise<AppendResult | Corrupt>;
  /** Several transitions under one expected revision, all or none. */
  appendMany(input: AppendManyInput): MaybePromise<AppendResult | Corrupt>;
  claim(input: ClaimInput): MaybePromise<ClaimResult | Corrupt>;
  verifyFence(input: VerifyFenceInput): MaybePromise<VerifyFenceResult | Corrupt>;
  load(recordId: string): MaybePromise<LoadResult>;
  loadByIdempotency(key: string): MaybePromise<LoadResult>;
}

/** A record as a page of a query lists it: its index row, without lease internals. */
export interface RecordSummary {
  record_id: string;
  trace_id: string | null;
  agent_id: string | null;
  tool: string | null;
  verdict: string | null;
  state: string;
  effect: string;
  outcome_status: string | null;
  revision: number;
  created_at: number;
  updated_at: number;
}

export interface JournalQuery {
  agent_id?: string;
  tool?: string;
  verdict?: string;
  state?: string;
  /** Inclusive bounds on created_at (Unix seconds). */
  from?: number;
  to?: number;
  /** Resume strictly after this (created_at, record_id). */
  after?: { created_at: number; record_id: string };
  limit: number;
}

/** The receipts a history carries, in the order they were issued. */
export const receiptsOf = (history: readonly JournalEntry[]): JsonValue[] => history.flatMap((e) => (e.receipt ? [e.receipt] : []));
