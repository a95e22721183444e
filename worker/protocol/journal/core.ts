/**
 * The journal's rules, once, over a synchronous storage interface: both adapters (memory and
 * Durable Object) run these same functions, the Durable Object inside one SQLite transaction per
 * operation. Every operation first replays the record's ordered history (the snapshot is what the
 * history adds up to, never what an index row claims) and refuses a history that does not add up:
 * a missing or reordered revision, an entry that does not follow its predecessor's digest, an edge
 * the lifecycle does not have, an effect its state cannot carry, or an index row that disagrees.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { isCredentialName, REDACTED, snapshotJson, type JsonObject, type JsonValue } from "../boundary.js";
import { jcs } from "../digest.js";
import { toHex, utf8 } from "../encoding.js";
import { parseReceipt } from "../receipt.js";
import { isJsonObject } from "../strict-json.js";
import { isAllowedTransition, isConsistentEffect, isEffectDisposition, isJournalState, outcomeStatus, type EffectDisposition, type JournalState } from "./lifecycle.js";
import type {
  AppendInput, AppendManyInput, AppendResult, ClaimInput, ClaimResult, Corrupt, JournalEntry, JournalRecord, LoadResult,
  ReservationResult, ReserveInput, ReserveResult, Transition, VerifyFenceInput, VerifyFenceResult,
} from "./port.js";

/** The index row an adapter keeps beside the history: for lookups, queries and lease alarms only. */
export interface JournalRow {
  record_id: string;
  idempotency_key: string;
  action_digest: string;
  state: JournalState;
  effect: EffectDisposition;
  revision: number;
  fence: number;
  lease_fence: number | null;
  lease_until: number | null;
  /** When the adapter's own clock should lapse the lease (milliseconds), or null when none is held. */
  lease_deadline_ms: number | null;
  created_at: number;
  updated_at: number;
  agent_id: string | null;
  tool: string | null;
  trace_id: string | null;
  verdict: string | null;
  outcome_status: string | null;
  /**
   * SHA-256 (hex) of the latest entry's canonical JSON: the history's chain ends here, so the
   * latest entry cannot be altered without the row saying otherwise (each earlier one is covered by
   * its successor's `prev`). Null or absent in a row written before the column existed; set by its
   * next write.
   */
  head?: string | null;
}

/** What an adapter stores; called only from inside the adapter's transaction. */
export interface JournalStorage {
  row(recordId: string): JournalRow | null;
  /** The record's entries in revision order. */
  history(recordId: string): JournalEntry[];
  /** The record's entries at these revisions (those that exist), in revision order: a read of a few, not of the history. */
  entriesAt(recordId: string, revisions: readonly number[]): JournalEntry[];
  /** Writes the row (inserted when `created`, else replaced) and appends the entries. */
  write(row: JournalRow, entries: readonly JournalEntry[], created: boolean): void;
  /** Records whose lease deadline is at or before `nowMs`. */
  due(nowMs: number): string[];
}

export interface JournalCoreOptions {
  /** The adapter-clock deadline (ms) of a lease claimed at `at` for `seconds`. */
  leaseDeadline(at: number, seconds: number): number;
}

/** Limits on what a caller may put in: one constant for each. */
export const MAX_IDEMPOTENCY_KEY = 256;
export const MAX_LEASE_SECONDS = 3600;
/** Canonical bytes of a transition's receipt, detail and extensions together. */
export const MAX_TRANSITION_BYTES = 32 * 1024;
export const MAX_EXTENSION_NAMESPACES = 16;
/**
 * Entries a record's history may reach by repeating a state (awaiting_approval → awaiting_approval,
 * started → started: the lifecycle's only cycles). Every other edge moves the record forward, at
 * most a dozen more entries to a final state, so a record past this bound can still be closed. It
 * bounds what a load answers (≤ ~8.5 MiB at MAX_TRANSITION_BYTES an entry, well inside the 32 MiB a
 * Durable Object may return) and what each call replays: an unbounded loop made a record that no
 * load could return again.
 */
export const MAX_REPEATING_HISTORY = 256;
/**
 * The other bound on a repeated state: the characters (UTF-16 code units) of canonical JSON a
 * record's history may hold when it repeats a state again. Every call on a record replays (digests
 * and checks) its whole history, so 256 entries of 32 KiB (~8.5 MiB) cost 0.3-0.7 s a call; past
 * this size a repeated state is refused as past the count, and a history stays within this size
 * plus its forward steps (~1.4 Mi code units at most; up to ~3x as many UTF-8 bytes, since a step's
 * MAX_TRANSITION_BYTES counts bytes: ~96 steps of three-byte characters fit under this bound).
 */
export const MAX_REPEATING_HISTORY_SIZE = 1024 * 1024;
/** The size MAX_REPEATING_HISTORY_SIZE counts: the canonical JSON of every entry. */
export const historySize = (history: readonly JournalEntry[]): number => history.reduce((n, e) => n + jcs(e).length, 0);
/** Reverse-DNS namespaces of at least three labels (`com.example.provider`). */
export const EXTENSION_NAMESPACE = /^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9](?:[a-z0-9-]{0,62})){2,}$/;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]+$/;

/** A caller's input the journal will not take: the routes answer it as a 400. */
export class JournalInputError extends Error {
  constructor(
    readonly code: "MALFORMED_REQUEST" | "EXTENSION_INVALID",
    detail: string,
  ) {
    super(detail);
    this.name = "JournalInputError";
  }
}

const RECORD_DOMAIN = "countersign/journal-record/v1\n";

/** A record's id: derived from its idempotency key, so every adapter and shard agrees without a lookup. */
export function recordIdOf(idempotencyKey: string): string {
  return toHex(sha256(utf8(RECORD_DOMAIN + idempotencyKey))).slice(0, 32);
}

export const RECORD_ID = /^[0-9a-f]{32}$/;

export function entryDigest(entry: JournalEntry): string {
  return digestOfText(jcs(entry));
}

const digestOfText = (canonical: string): string => toHex(sha256(utf8(canonical)));

export function checkIdempotencyKey(key: unknown): string {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY || !IDEMPOTENCY_KEY.test(key)) {
    throw new JournalInputError("MALFORMED_REQUEST", `idempotency_key must be 1-${MAX_IDEMPOTENCY_KEY} visible ASCII characters`);
  }
  return key;
}

function jsonObjectOrNull(value: unknown, what: string): JsonObject | null {
  if (value === undefined || value === null) return null;
  let copy: JsonValue;
  try {
    copy = snapshotJson(value);
  } catch (err) {
    // An authority field, an accessor, a prototype key: input the journal refuses, a 400.
    throw new JournalInputError("MALFORMED_REQUEST", `${what}: ${(err as Error).message}`);
  }
  if (!isJsonObject(copy)) throw new JournalInputError("MALFORMED_REQUEST", `${what} must be a JSON object`);
  return copy as JsonObject;
}

/**
 * An HTTP field name (RFC 9110 token), or an HTTP/2 pseudo-header (`:method`, `:path`, which
 * Node's http2 rawHeaders list beside the others): what a flat header list holds at each even index.
 */
const FIELD_NAME = /^:?[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What a header list holds at each odd index: a field value, or the values of a repeated field; never an object. */
const scalar = (x: JsonValue): boolean => x === null || typeof x !== "object";
const fieldValues = (x: JsonValue): boolean => scalar(x) || (Array.isArray(x) && x.every(scalar));
/** A header named inside a dotted attribute name: `http.request.header.authorization` (OpenTelemetry), `http.request.headers.cookie`. */
const DOTTED_HEADER = /(?:^|\.)headers?\.([^.]+)$/i;
/**
 * Whether a name is a credential header's: the name itself, or the header a dotted attribute
 * name ends in (`http.request.header.authorization`, which no credential name matches whole).
 */
const credentialHeader = (name: string): boolean => {
  const dotted = DOTTED_HEADER.exec(name);
  return isCredentialName(name) || (dotted !== null && isCredentialName(dotted[1]));
};
const ENTRY_NAMES = ["name", "key", "header"];
const ENTRY_VALUES = ["value", "values"];

/**
 * Header lists as providers record them, after the snapshot has redacted by member name: there a
 * header's name is data, not the member's, so an authorization header's value sat under an
 * innocent `value` and was stored as sent. A credential-named header's value is
 * redacted in `{name|key|header, value|values}` entries (HAR, Postman; member names in any
 * case; OpenTelemetry's attributes `{key: "http.request.header.<name>", value: {…}}`), in `[name, value]` pairs (`Headers` entries, Object.entries) and in flat `[name, value,
 * name, value…]` lists (Node's rawHeaders: an even number of elements, every even one a field name,
 * every odd one a value or a list of them, so a pair whose second member is an object is
 * evidence, not a header).
 */
function redactHeaderLists(value: JsonValue): JsonValue {
  if (Array.isArray(value)) {
    const items = value.map(redactHeaderLists);
    const flat = items.length > 0 && items.length % 2 === 0 && items.every((x, i) => (i % 2 === 1 ? fieldValues(x) : typeof x === "string" && FIELD_NAME.test(x)));
    return Object.freeze(flat ? items.map((x, i) => (i % 2 === 1 && credentialHeader(items[i - 1] as string) ? REDACTED : x)) : items);
  }
  if (!isJsonObject(value)) return value;
  const out: Record<string, JsonValue> = {};
  // A member named as a header's attribute is redacted as a credential-named member is.
  for (const [k, v] of Object.entries(value)) out[k] = credentialHeader(k) ? REDACTED : redactHeaderLists(v as JsonValue);
  const members = Object.keys(out);
  if (members.some((k) => ENTRY_NAMES.includes(k.toLowerCase()) && typeof out[k] === "string" && credentialHeader(out[k] as string))) {
    for (const k of members) if (ENTRY_VALUES.includes(k.toLowerCase())) out[k] = REDACTED;
  }
  return Object.freeze(out);
}

/**
 * Provider extensions as the journal accepts them: an object of reverse-DNS namespaces, each an
 * object, snapshotted through the strict boundary with credentials redacted (credential-named
 * members, credential headers' values in header lists and credential-shaped strings become
 * "[redacted]"); any other authority field, an accessor, a prototype key or a namespace out of
 * form refuses the whole.
 */
export function redactedExtensions(value: unknown): JsonObject | null {
  if (value === undefined || value === null) return null;
  if (!isJsonObject(value)) throw new JournalInputError("EXTENSION_INVALID", "extensions must be an object of namespaces");
  let copy: JsonValue;
  try {
    copy = redactHeaderLists(snapshotJson(value, { credentials: "redact" }));
  } catch (err) {
    throw new JournalInputError("EXTENSION_INVALID", `extensions: ${(err as Error).message}`);
  }
  const namespaces = Object.keys(copy as JsonObject);
  if (namespaces.length > MAX_EXTENSION_NAMESPACES) throw new JournalInputError("EXTENSION_INVALID", `at most ${MAX_EXTENSION_NAMESPACES} extension namespaces`);
  for (const ns of namespaces) {
    if (!EXTENSION_NAMESPACE.test(ns)) throw new JournalInputError("EXTENSION_INVALID", `extension namespace ${JSON.stringify(ns)} is not reverse-DNS with at least three labels (com.example.name)`);
    if (!isJsonObject((copy as JsonObject)[ns])) throw new JournalInputError("EXTENSION_INVALID", `extension ${ns} must be an object`);
  }
  return namespaces.length > 0 ? (copy as JsonObject) : null;
}

/** A transition's parts through the strict boundary, checked for form; what the adapters store. */
export function prepareTransition(t: Transition): Required<Pick<Transition, "to" | "effect">> & { receipt: JsonObject | null; detail: JsonObject | null; extensions: JsonObject | null; size: number } {
  if (!isJournalState(t.to)) throw new JournalInputError("MALFORMED_REQUEST", "to must be a journal state");
  if (!isEffectDisposition(t.effect)) throw new JournalInputError("MALFORMED_REQUEST", "effect must be an effect disposition");
  const receipt = jsonObjectOrNull(t.receipt, "receipt");
  const detail = jsonObjectOrNull(t.detail, "detail");
  // A record's verdict is read from its latest receipt, so only a CCS receipt may be recorded as one.
  if (receipt !== null) {
    const parsed = parseReceipt(receipt);
    if (!parsed.ok) throw new JournalInputError("MALFORMED_REQUEST", `receipt is not a CCS receipt: ${parsed.failures.map((f) => f.detail).join("; ")}`);
  }
  const extensions = redactedExtensions(t.extensions);
  const canonical = jcs({ receipt, detail, extensions });
  if (utf8(canonical).byteLength > MAX_TRANSITION_BYTES) throw new JournalInputError("MALFORMED_REQUEST", `receipt, detail and extensions exceed ${MAX_TRANSITION_BYTES} bytes`);
  return { to: t.to, effect: t.effect, receipt, detail, extensions, size: canonical.length };
}

function checkAt(at: unknown): number {
  if (typeof at !== "number" || !Number.isFinite(at) || at < 0) throw new JournalInputError("MALFORMED_REQUEST", "at must be Unix seconds");
  return at;
}

type Replayed = { ok: true; record: JournalRecord; size: number } | { ok: false; reason: string };

/** The record an ordered history adds up to, or why it does not add up. */
export function replay(recordId: string, history: readonly JournalEntry[]): Replayed {
  const bad = (reason: string): Replayed => ({ ok: false, reason });
  if (history.length === 0) return bad("the record has no history");
  const first = history[0];
  const d = first.detail;
  if (first.revision !== 1 || first.prev !== "" || first.event !== "reserve" || first.from !== null || first.to !== "reserved" || first.effect !== "not-started") return bad("the first entry is not a reservation");
  if (!d || typeof d.idempotency_key !== "string" || typeof d.action_digest !== "string" || !isJsonObject(d.attributes)) return bad("the first entry is not a reservation");
  if (recordIdOf(d.idempotency_key) !== recordId) return bad("the reservation belongs to another record");
  let rec: JournalRecord = {
    record_id: recordId, idempotency_key: d.idempotency_key, action_digest: d.action_digest, attributes: d.attributes as JsonObject,
    state: "reserved", effect: "not-started", revision: 1, fence: 0, lease: null, lease_lapsed: false, verdict: null, outcome_status: null, created_at: first.at, updated_at: first.at,
  };
  let canonical = jcs(first);
  let size = canonical.length;
  let prev = digestOfText(canonical);
  for (let i = 1; i < history.length; i++) {
    const e = history[i];
    const r = i + 1;
    if (e.revision !== r) return bad(`revision ${r} is missing or out of order (found ${e.revision})`);
    if (e.prev !== prev) return bad(`entry ${r} does not follow entry ${r - 1}`);
    canonical = jcs(e);
    size += canonical.length;
    prev = digestOfText(canonical);
    if (!isJournalState(e.to) || !isEffectDisposition(e.effect)) return bad(`entry ${r} names no known state or effect`);
    if (!isConsistentEffect(e.to, e.effect)) return bad(`entry ${r}: ${e.to} cannot carry the effect ${e.effect}`);
    if (e.event === "reserve") return bad(`entry ${r} reserves an existing record`);
    if (e.from !== rec.state) return bad(`entry ${r} starts from ${e.from} but the record is ${rec.state}`);
    if (!isAllowedTransition(rec.state, e.to)) return bad(`entry ${r}: ${rec.state} → ${e.to} is not a lifecycle edge`);
    if (e.event === "claim") {
      if (rec.state !== "ready" || e.to !== "started" || e.fence !== rec.fence + 1 || typeof e.lease_until !== "number") return bad(`entry ${r} is not a valid claim`);
      rec = { ...rec, fence: e.fence, lease: { fence: e.fence, until: e.lease_until }, lease_lapsed: false };
    } else if (e.event === "lapse") {
      if (rec.state !== "started" || e.to !== "started" || !rec.lease || e.fence !== rec.fence + 1) return bad(`entry ${r} is not a valid lapse`);
      rec = { ...rec, fence: e.fence, lease: null, lease_lapsed: true };
    } else if (e.event === "append") {
      const holder = rec.state === "started" && rec.lease ? rec.lease.fence : null;
      if (e.fence !== holder) return bad(`entry ${r} was not written under the lease's fence`);
      if (e.to !== "started") rec = { ...rec, lease: null, lease_lapsed: false };
    } else return bad(`entry ${r} has an unknown event`);
    const verdict: string | null = e.receipt && typeof e.receipt.verdict === "string" ? e.receipt.verdict : rec.verdict;
    rec = { ...rec, state: e.to, effect: e.effect, revision: r, verdict, updated_at: e.at };
  }
  return { ok: true, record: { ...rec, outcome_status: outcomeStatus(rec.state, rec.lease_lapsed, rec.verdict) }, size };
}

const text = (v: JsonValue | undefined): string | null => (typeof v === "string" ? v : null);

function rowOf(record: JournalRecord, deadlineMs: number | null, head: JournalEntry): JournalRow {
  return {
    record_id: record.record_id,
    idempotency_key: record.idempotency_key,
    action_digest: record.action_digest,
    state: record.state,
    effect: record.effect,
    revision: record.revision,
    fence: record.fence,
    lease_fence: record.lease?.fence ?? null,
    lease_until: record.lease?.until ?? null,
    lease_deadline_ms: record.lease ? deadlineMs : null,
    created_at: record.created_at,
    updated_at: record.updated_at,
    agent_id: text(record.attributes.agent_id),
    tool: text(record.attributes.tool),
    trace_id: text(record.attributes.trace_id),
    verdict: record.verdict,
    outcome_status: record.outcome_status,
    head: entryDigest(head),
  };
}

/** The index row must say what the history says; otherwise one of them was altered. */
function rowDisagrees(row: JournalRow, record: JournalRecord, history: readonly JournalEntry[]): string | null {
  // The latest entry has no successor to vouch for it: the row's head does.
  if (row.head != null && row.head !== entryDigest(history[history.length - 1])) return "the latest entry does not match the index row's head digest: it was altered";
  const pairs: [string, unknown, unknown][] = [
    ["state", row.state, record.state],
    ["effect", row.effect, record.effect],
    ["revision", row.revision, record.revision],
    ["fence", row.fence, record.fence],
    ["lease", row.lease_fence, record.lease?.fence ?? null],
    ["idempotency key", row.idempotency_key, record.idempotency_key],
  ];
  const off = pairs.find(([, a, b]) => a !== b);
  return off ? `the index row's ${off[0]} (${String(off[1])}) disagrees with the history (${String(off[2])})` : null;
}

/**
 * The lapse of a lease whose end (`until`, caller's clock) is at or before `at`, as the alarm
 * would write it (dated at the lease's end, a new fence), or null while the lease runs or when
 * none is held. The alarm lapses a lease on the adapter's clock, and an alarm may run late: a
 * fence must not outlive its lease meanwhile.
 */
function endedLease(record: JournalRecord, at: number): Omit<JournalEntry, "revision" | "prev"> | null {
  if (record.state !== "started" || !record.lease || at < record.lease.until) return null;
  return { at: record.lease.until, event: "lapse", from: "started", to: "started", effect: "unknown", fence: record.fence + 1, lease_until: null, receipt: null, detail: null, extensions: null };
}

type Loaded = { kind: "found"; record: JournalRecord; history: JournalEntry[]; row: JournalRow; size: number } | { kind: "not-found" } | Corrupt;

/** The journal's operations over `storage`. Synchronous: the adapter decides the transaction around each call. */
export function journalCore(storage: JournalStorage, options: JournalCoreOptions) {
  function read(recordId: string): Loaded {
    const row = storage.row(recordId);
    if (!row) return { kind: "not-found" };
    const history = storage.history(recordId);
    const replayed = replay(recordId, history);
    if (!replayed.ok) return { kind: "corrupt", record_id: recordId, reason: replayed.reason };
    const disagreement = rowDisagrees(row, replayed.record, history);
    if (disagreement) return { kind: "corrupt", record_id: recordId, reason: disagreement };
    return { kind: "found", record: replayed.record, history, row, size: replayed.size };
  }

  /** Appends entries to a loaded record: replays the new history, writes it. */
  function commit(loaded: Extract<Loaded, { kind: "found" }>, drafts: Omit<JournalEntry, "revision" | "prev">[], deadlineMs: number | null) {
    const history = [...loaded.history];
    for (const d of drafts) {
      const last = history[history.length - 1];
      history.push({ ...d, revision: last.revision + 1, prev: entryDigest(last) });
    }
    const replayed = replay(loaded.record.record_id, history);
    if (!replayed.ok) throw new Error(`journal: a checked step did not replay: ${replayed.reason}`);
    const added = history.slice(loaded.history.length);
    const keepDeadline = replayed.record.lease && replayed.record.lease.fence === loaded.row.lease_fence ? loaded.row.lease_deadline_ms : deadlineMs;
    storage.write(rowOf(replayed.record, keepDeadline, history[history.length - 1]), added, false);
    return { record: replayed.record, entries: added };
  }

  function load(recordId: string): LoadResult {
    const loaded = read(recordId);
    return loaded.kind === "found" ? { kind: "found", record: loaded.record, history: loaded.history } : loaded;
  }

  function appendMany(input: AppendManyInput): AppendResult | Corrupt {
    const at = checkAt(input.at);
    const steps = input.transitions.map(prepareTransition);
    if (steps.length === 0) throw new JournalInputError("MALFORMED_REQUEST", "at least one transition is needed");
    const loaded = read(input.record_id);
    if (loaded.kind !== "found") return loaded;
    const { record } = loaded;
    if (record.revision !== input.expected_revision) return { kind: "revision-conflict", expected: input.expected_revision, actual: record.revision };
    let state = record.state;
    let size = loaded.size;
    let holder = record.state === "started" && record.lease ? record.lease.fence : null;
    const drafts: Omit<JournalEntry, "revision" | "prev">[] = [];
    // A lease past its end holds nothing, whether or not the alarm has lapsed it yet: the lapse is written first, here.
    const ended = endedLease(record, at);
    if (ended) {
      drafts.push(ended);
      holder = null;
    }
    for (const step of steps) {
      if (!isAllowedTransition(state, step.to)) return { kind: "illegal-transition", from: state, to: step.to, effect: step.effect, reason: `${state} → ${step.to} is not a lifecycle edge` };
      if (!isConsistentEffect(step.to, step.effect)) return { kind: "illegal-transition", from: state, to: step.to, effect: step.effect, reason: `${step.to} cannot carry the effect ${step.effect}` };
      // `started` is entered only by a claim, which issues the fence; an append may stay in it only under a live lease.
      if (step.to === "started" && state !== "started") return { kind: "illegal-transition", from: state, to: step.to, effect: step.effect, reason: "a record enters started only by a claim" };
      if (step.to === "started" && holder === null) return { kind: "illegal-transition", from: state, to: step.to, effect: step.effect, reason: "no lease is held: a lapsed execution leaves started only by its outcome" };
      // A fence given must be the lease's; leaving or staying in `started` under a lease needs it.
      if (drafts.length === (ended ? 1 : 0) && (input.fence !== undefined ? input.fence !== holder : holder !== null)) return { kind: "fence-conflict", fence: input.fence ?? null, current: holder };
      // A repeated state is the only way a history grows without moving on: bounded, so every load can still answer it.
      if (step.to === state && loaded.history.length + drafts.length + 1 > MAX_REPEATING_HISTORY) {
        throw new JournalInputError("MALFORMED_REQUEST", `the record's history holds ${loaded.history.length + drafts.length} entries: ${state} → ${state} is refused past ${MAX_REPEATING_HISTORY}; record its next state instead`);
      }
      if (step.to === state && size + step.size > MAX_REPEATING_HISTORY_SIZE) {
        throw new JournalInputError("MALFORMED_REQUEST", `the record's history holds about ${size} characters of canonical JSON: ${state} → ${state} is refused past ${MAX_REPEATING_HISTORY_SIZE}; record its next state instead`);
      }
      size += step.size;
      drafts.push({ at, event: "append", from: state, to: step.to, effect: step.effect, fence: holder, lease_until: null, receipt: step.receipt, detail: step.detail, extensions: step.extensions });
      if (step.to !== "started") holder = null;
      state = step.to;
    }
    const done = commit(loaded, drafts, null);
    return { kind: "appended", ...done };
  }

  /**
   * The reservation of `recordId` and its index row, checked without replaying the history (a
   * replay costs as much as the history holds: up to ~0.25 s for one at its size bound): the first
   * entry must be a reservation of this record saying what the row says, entry 2 must follow it,
   * and the latest entry must be the row's revision and match the row's head digest. Three entries
   * at most are read, whatever the history holds.
   */
  function reservation(recordId: string): ReservationResult {
    const row = storage.row(recordId);
    if (!row) return { kind: "not-found" };
    const corrupt = (reason: string): Corrupt => ({ kind: "corrupt", record_id: recordId, reason });
    const wanted = [...new Set([1, 2, row.revision])].filter((r) => r >= 1 && r <= row.revision);
    const found = new Map(storage.entriesAt(recordId, wanted).map((e) => [e.revision, e]));
    const first = found.get(1);
    if (!first) return corrupt("the record has no history");
    const replayed = replay(recordId, [first]);
    if (!replayed.ok) return corrupt(replayed.reason);
    const { record } = replayed;
    if (row.idempotency_key !== record.idempotency_key) return corrupt(`the index row's idempotency key (${row.idempotency_key}) disagrees with the history (${record.idempotency_key})`);
    if (row.action_digest !== record.action_digest) return corrupt("the index row's action digest disagrees with the history");
    if (row.revision > 1) {
      const second = found.get(2);
      if (!second || second.revision !== 2) return corrupt(`revision 2 is missing or out of order`);
      if (second.prev !== entryDigest(first)) return corrupt("entry 2 does not follow entry 1");
    }
    const latest = found.get(row.revision);
    if (!latest || latest.revision !== row.revision) return corrupt(`the index row's revision (${row.revision}) has no entry`);
    if (row.head != null && row.head !== entryDigest(latest)) return corrupt("the latest entry does not match the index row's head digest: it was altered");
    return { kind: "found", record_id: recordId, idempotency_key: record.idempotency_key, action_digest: record.action_digest, attributes: record.attributes };
  }

  return {
    load,
    reservation,
    loadByIdempotency: (key: string): LoadResult => load(recordIdOf(checkIdempotencyKey(key))),

    reserve(input: ReserveInput): ReserveResult | Corrupt {
      const key = checkIdempotencyKey(input.idempotency_key);
      const at = checkAt(input.at);
      if (typeof input.action_digest !== "string" || input.action_digest.length === 0 || input.action_digest.length > 256) throw new JournalInputError("MALFORMED_REQUEST", "action_digest must be a string of 1-256 characters");
      const attributes = jsonObjectOrNull(input.attributes ?? {}, "attributes")!;
      // A reservation is a step like any other: what it stores is bounded as an append's receipt, detail and extensions are.
      if (utf8(jcs({ idempotency_key: key, action_digest: input.action_digest, attributes })).byteLength > MAX_TRANSITION_BYTES) {
        throw new JournalInputError("MALFORMED_REQUEST", `idempotency_key, action_digest and attributes exceed ${MAX_TRANSITION_BYTES} bytes`);
      }
      const recordId = recordIdOf(key);
      const loaded = read(recordId);
      if (loaded.kind === "corrupt") return loaded;
      if (loaded.kind === "found") {
        return loaded.record.action_digest === input.action_digest ? { kind: "existing", record: loaded.record } : { kind: "conflict", record_id: recordId, action_digest: loaded.record.action_digest };
      }
      const entry: JournalEntry = {
        revision: 1, at, event: "reserve", from: null, to: "reserved", effect: "not-started", fence: null, lease_until: null, receipt: null,
        detail: snapshotJson({ idempotency_key: key, action_digest: input.action_digest, attributes }) as JsonObject, extensions: null, prev: "",
      };
      const replayed = replay(recordId, [entry]);
      if (!replayed.ok) throw new Error(`journal: a reservation did not replay: ${replayed.reason}`);
      storage.write(rowOf(replayed.record, null, entry), [entry], true);
      return { kind: "created", record: replayed.record };
    },

    append: (input: AppendInput): AppendResult | Corrupt =>
      appendMany({ record_id: input.record_id, expected_revision: input.expected_revision, at: input.at, fence: input.fence, transitions: [input] }),
    appendMany,

    claim(input: ClaimInput): ClaimResult | Corrupt {
      const at = checkAt(input.at);
      const seconds = input.lease_seconds;
      if (typeof seconds !== "number" || !(seconds > 0) || seconds > MAX_LEASE_SECONDS) throw new JournalInputError("MALFORMED_REQUEST", `lease_seconds must be more than 0 and at most ${MAX_LEASE_SECONDS}`);
      const loaded = read(input.record_id);
      if (loaded.kind !== "found") return loaded;
      const { record } = loaded;
      if (input.expected_revision !== undefined && record.revision !== input.expected_revision) return { kind: "revision-conflict", expected: input.expected_revision, actual: record.revision };
      if (record.state === "started" && record.lease) {
        if (!endedLease(record, at)) return { kind: "held", lease_until: record.lease.until };
        // Its lease has ended (the alarm has not lapsed it yet): it is not held, and a lapsed start is never claimed again.
        return { kind: "not-eligible", state: record.state, lease_lapsed: true };
      }
      if (record.state !== "ready") return { kind: "not-eligible", state: record.state, lease_lapsed: record.lease_lapsed };
      const fence = record.fence + 1;
      const leaseUntil = Math.round((at + seconds) * 1000) / 1000;
      const done = commit(loaded, [{ at, event: "claim", from: "ready", to: "started", effect: "unknown", fence, lease_until: leaseUntil, receipt: null, detail: null, extensions: null }], options.leaseDeadline(at, seconds));
      return { kind: "claimed", record: done.record, fence, lease_until: leaseUntil };
    },

    verifyFence(input: VerifyFenceInput): VerifyFenceResult | Corrupt {
      const loaded = read(input.record_id);
      if (loaded.kind !== "found") return loaded;
      const current = input.at !== undefined && endedLease(loaded.record, checkAt(input.at)) ? null : (loaded.record.lease?.fence ?? null);
      return current !== null && current === input.fence ? { kind: "valid", record: loaded.record } : { kind: "fence-conflict", fence: input.fence, current };
    },

    /**
     * Lapses the lease of every started record whose deadline has passed: the record stays
     * `started`, its effect `unknown`, the lease is revoked by a new fence (a late result from
     * the old holder is a fence conflict), and it reports outcome `unknown` until reconciled.
     * The entry is dated at the lease's end on the caller's clock.
     */
    lapseDue(nowMs: number): string[] {
      const lapsed: string[] = [];
      for (const id of storage.due(nowMs)) {
        const loaded = read(id);
        if (loaded.kind !== "found" || loaded.record.state !== "started" || !loaded.record.lease) continue;
        const { record } = loaded;
        commit(loaded, [{ at: record.lease!.until, event: "lapse", from: "started", to: "started", effect: "unknown", fence: record.fence + 1, lease_until: null, receipt: null, detail: null, extensions: null }], null);
        lapsed.push(id);
      }
      return lapsed;
    },
  };
}

export type JournalCore = ReturnType<typeof journalCore>;
