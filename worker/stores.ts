/**
 * Adapters from the protocol's ports to Workers storage: anchors in KV (cached briefly per
 * isolate) and replay state in IssuerLedger Durable Objects. Every call is bounded by a timeout
 * and any failure surfaces as VerifierUnavailable, so the verifier fails closed.
 */
import { anchorKvKey, pinnedIssuer, readAnchorRecord, revokedKeyKvKey, type AnchorRecord, type PinnedIssuer } from "./protocol/anchors.js";
import type { AnchorLedgerState, LedgerStats } from "../durable-objects/issuer-ledger.js";
import {
  ledgerName,
  ledgerNames,
  maxHighest,
  type ClaimQuery,
  type LedgerAnswer,
  type LedgerQuery,
  type ReplayLedger,
  type KeyUse,
  type Revocation,
  type SequenceReset,
  type SequenceResetAudit,
  type SequenceResetCursor,
  WITHDRAW_PAGE,
  type Withdrawal,
} from "./protocol/ledger.js";
import { ApiError, withTimeout } from "./http.js";
import { sha256Hex } from "./protocol/digest.js";
import type { MetricsBatch } from "./metrics.js";
import { allowOnly } from "./protocol/conformance/verifier-class.js";
import type { DecisionSeries, DecisionStatsView } from "../durable-objects/decision-stats.js";

/** The one DecisionStats object every isolate flushes into. */
const DECISION_STATS_NAME = "decisions";
import type { RelyingParty } from "./protocol/relying-parties.js";
import type { Env } from "./env.js";

export const ANCHOR_CACHE_TTL_MS = 30_000;
/** Most anchors one isolate keeps. Only records read from KV enter, i.e. pinned issuers. */
export const ANCHOR_CACHE_ENTRIES = 1024;

export type AnchorCache = Map<string, { at: number; record: AnchorRecord; pinned: PinnedIssuer }>;

/** The global record of a revoked key (KV `revoked-key:<fingerprint>`): no issuer may pin it again. */
export interface RevokedKeyRecord {
  fingerprint: string;
  issuer: string;
  kid: string;
  revoked_at: number;
}

export interface AnchorStore {
  get(issuer: string): Promise<AnchorRecord | null>;
  /**
   * The record as KV holds it now, past this isolate's cache: what an admin change reads before it
   * writes, so a change made through another isolate in the cache's lifetime is not written over.
   */
  fresh(issuer: string): Promise<AnchorRecord | null>;
  pinned(issuer: string): Promise<PinnedIssuer | null>;
  /** Whether this isolate's cache holds `issuer` as pinned; reads nothing. */
  cachedPinned(issuer: string): boolean;
  /** Entries in this isolate's anchor cache. */
  cacheSize(): number;
  put(record: AnchorRecord): Promise<void>;
  /** Puts `record` in this isolate's cache, as written by the admin registry (worker/admin-registry.ts). */
  remember(record: AnchorRecord): void;
  /** The first `limit` pinned issuers in key order, and whether that is all of them. */
  listPinned(limit: number): Promise<{ issuers: string[]; complete: boolean }>;
  /** The global revoked-key record; eventually consistent, so never read on the verify path. */
  revokedKey(fingerprint: string): Promise<RevokedKeyRecord | null>;
  putRevokedKey(record: RevokedKeyRecord): Promise<void>;
  /**
   * The issuer a key was first pinned for, and its kid then (KV `key-holder:<fingerprint>`, written
   * before the anchor and never removed): a key belongs to one issuer. It also keeps a key
   * revocable when concurrent pins of one issuer dropped it from the anchor's key history, as they
   * could before pins were serialised by the AdminRegistry object. `kid` is null for a record
   * written before it was kept.
   */
  keyHolder(fingerprint: string): Promise<KeyHolder | null>;
  putKeyHolder(fingerprint: string, holder: KeyHolder): Promise<void>;
}

export interface KeyHolder {
  issuer: string;
  kid: string | null;
}

/** A key-holder record: JSON `{issuer, kid}`, or (written before the kid was kept) the issuer URI alone. */
function readKeyHolder(text: string | null): KeyHolder | null {
  if (text === null) return null;
  if (!text.startsWith("{")) return { issuer: text, kid: null };
  const v = JSON.parse(text) as { issuer: string; kid?: string };
  return { issuer: v.issuer, kid: typeof v.kid === "string" ? v.kid : null };
}

/**
 * Per isolate cache, how many writes this isolate made to it (anchors pinned, relying parties
 * deleted or rotated, issuer views evicted, the own-key check cleared): a read started before
 * such a write and finished after it holds what the write replaced, so it answers its own call but
 * is not cached. A reader notes `cacheWrites(cache)` before its
 * reads and caches only if it is unchanged.
 */
const writeCounts = new WeakMap<object, number>();
export const cacheWrites = (cache: object): number => writeCounts.get(cache) ?? 0;
export const countCacheWrite = (cache: object): void => void writeCounts.set(cache, cacheWrites(cache) + 1);

export function kvAnchorStore(env: Env, timeoutMs: number, cache: AnchorCache): AnchorStore {
  // A KV operation that fails, not only one that is slow, is 503 VERIFIER_UNAVAILABLE on every route that reads anchors (withTimeout).
  const kv = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "anchor store");
  const entryOf = (record: AnchorRecord) => ({ at: Date.now(), record, pinned: pinnedIssuer(record) });
  const remember = (record: AnchorRecord) => {
    const entry = entryOf(record);
    cache.delete(record.issuer);
    // The oldest entry (Map order is insertion order) makes room.
    if (cache.size >= ANCHOR_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
    cache.set(record.issuer, entry);
    return entry;
  };
  /** A record this isolate wrote (a pin it served): it bumps the cache's write count, so a read in flight across it is not cached over it. */
  const rememberWritten = (record: AnchorRecord) => {
    countCacheWrite(cache);
    return remember(record);
  };
  const load = async (issuer: string, cached = true) => {
    const hit = cached ? cache.get(issuer) : undefined;
    if (hit && Date.now() - hit.at < ANCHOR_CACHE_TTL_MS) return hit;
    const writes = cacheWrites(cache);
    const raw = await kv(env.ANCHORS.get(anchorKvKey(issuer), "json"));
    if (raw === null) return null;
    // A pin this isolate served while the read was in flight cached what it wrote: the read, made
    // before that write, answers this call but does not replace it (a rotated-out
    // key verified again here for 30 s).
    return cacheWrites(cache) === writes ? remember(readAnchorRecord(raw)) : entryOf(readAnchorRecord(raw));
  };
  return {
    get: async (issuer) => (await load(issuer))?.record ?? null,
    fresh: async (issuer) => (await load(issuer, false))?.record ?? null,
    pinned: async (issuer) => (await load(issuer))?.pinned ?? null,
    cachedPinned: (issuer) => cache.has(issuer),
    cacheSize: () => cache.size,
    async put(record) {
      await kv(env.ANCHORS.put(anchorKvKey(record.issuer), JSON.stringify(record)));
      rememberWritten(record);
    },
    remember: (record) => void rememberWritten(record),
    async listPinned(limit) {
      const prefix = anchorKvKey("");
      const page = await kv(env.ANCHORS.list({ prefix, limit }));
      return { issuers: page.keys.map((k) => k.name.slice(prefix.length)), complete: page.list_complete };
    },
    revokedKey: (fingerprint) => kv(env.ANCHORS.get<RevokedKeyRecord>(revokedKeyKvKey(fingerprint), "json")),
    putRevokedKey: (record) => kv(env.ANCHORS.put(revokedKeyKvKey(record.fingerprint), JSON.stringify(record))),
    keyHolder: async (fingerprint) => readKeyHolder(await kv(env.ANCHORS.get(`key-holder:${fingerprint}`))),
    putKeyHolder: (fingerprint, holder) => kv(env.ANCHORS.put(`key-holder:${fingerprint}`, JSON.stringify(holder))),
  };
}

/** A live chain's entry in the registry: the relying party that appended its hop 0, and when. */
export interface ChainRegistration {
  owner: string;
  created_at: number;
}

/**
 * The registry of live chains, KV `ANCHORS` `chain:<chain_id>`: written once a chain's hop 0 is
 * appended, so a chain id absent from it is never addressed to an EvidenceChain and a caller
 * cannot create one object per id it makes up. KV is eventually consistent: a chain just created
 * may briefly be absent elsewhere. The EvidenceChain stays the authority on its owner and hops.
 */
export interface ChainRegistry {
  get(chainId: string): Promise<ChainRegistration | null>;
  register(chainId: string, entry: ChainRegistration): Promise<void>;
}

export const chainKvKey = (chainId: string): string => `chain:${chainId}`;

export function kvChainRegistry(env: Env, timeoutMs: number): ChainRegistry {
  return {
    get: (chainId) => withTimeout(env.ANCHORS.get<ChainRegistration>(chainKvKey(chainId), "json"), timeoutMs, "chain registry"),
    register: (chainId, entry) => withTimeout(env.ANCHORS.put(chainKvKey(chainId), JSON.stringify(entry)), timeoutMs, "chain registry"),
  };
}

/** What the routes need of the ledgers, beyond the per-decision port. */
export interface LedgerClient {
  forDecision(issuer: string, nonce: string, shards: number): ReplayLedger;
  /** Revokes a key in every shard; idempotent, so a failed fan-out is simply retried. */
  revoke(issuer: string, shards: number, fingerprint: string, kid: string, at: number): Promise<Revocation>;
  /** Drops the sequence state of the keys a pin unpinned in every shard: one call per shard, whatever the number of keys. */
  forgetKeys(issuer: string, shards: number, fingerprints: readonly string[]): Promise<void>;
  /** Clears a key's sequence state in every shard; the first shard records the audit entry last, with the highest held anywhere. */
  resetSequence(issuer: string, shards: number, audit: Omit<SequenceResetAudit, "highest_elsewhere">): Promise<SequenceReset>;
  /** The issuer's revocations: every shard holds every one, so the first shard answers. */
  revocations(issuer: string, shards: number): Promise<Revocation[]>;
  /** Revocations and one page of sequence resets (the newest, or those before `before`), from the first shard. */
  anchorState(issuer: string, shards: number, before: SequenceResetCursor | null): Promise<AnchorLedgerState>;
  /** The issuer's state summed over its shards. */
  stats(issuer: string, shards: number): Promise<LedgerStats & { shards: number }>;
  /** Notes a key's use on the issuer's first shard (where its revocations are also answered from). */
  noteKeyUse(issuer: string, shards: number, fingerprint: string, use: KeyUse): Promise<{ revoked: boolean }>;
  keyUses(issuer: string, shards: number, fingerprint: string, after: string | null): Promise<KeyUse[]>;
  /** CCS §14: holds each nonce as withdrawn in the shard it maps to (at most WITHDRAW_PAGE a call); answers the rows written. */
  withdraw(issuer: string, shards: number, withdrawals: readonly Withdrawal[]): Promise<number>;
}

/** The minimal surface of an IssuerLedger stub, so tests can inject a failing one. */
export interface LedgerStub {
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
  revoke(fingerprint: string, kid: string, at: number): Promise<Revocation>;
  revocations(): Promise<Revocation[]>;
  forgetKeys(fingerprints: string[]): Promise<void>;
  resetSequence(fingerprint: string, audit: SequenceResetAudit | null): Promise<{ previous_highest: number | null }>;
  anchorState(before: SequenceResetCursor | null): Promise<AnchorLedgerState>;
  stats(): Promise<LedgerStats>;
  noteKeyUse(fingerprint: string, use: KeyUse): Promise<{ revoked: boolean }>;
  keyUses(fingerprint: string, after: string | null): Promise<KeyUse[]>;
  withdraw(withdrawals: Withdrawal[]): Promise<number>;
}

export function durableLedgerStub(env: Env) {
  return (name: string): LedgerStub => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name)) as unknown as LedgerStub;
}

function mergeStats(all: LedgerStats[]): LedgerStats & { shards: number } {
  const windows = new Map<string, number>();
  for (const s of all) for (const w of s.windows) windows.set(w.fingerprint, Math.max(w.highest, windows.get(w.fingerprint) ?? -1));
  return {
    shards: all.length,
    nonces: all.reduce((n, s) => n + s.nonces, 0),
    database_bytes: all.reduce((n, s) => n + s.database_bytes, 0),
    rows_written: all.reduce((n, s) => n + s.rows_written, 0),
    windows: [...windows].sort(([a], [b]) => (a < b ? -1 : 1)).map(([fingerprint, highest]) => ({ fingerprint, highest })),
    revoked: all[0].revoked,
  };
}

/** A sharded issuer without the deployment's shard key is a configuration error, never an unkeyed shard choice. */
const shardKeyMissing = () =>
  new ApiError(500, "SERVICE_MISCONFIGURED", "this issuer is sharded (ledger_shards > 1) but LEDGER_SHARD_KEY is unset or shorter than 32 characters");

/** Throws SERVICE_MISCONFIGURED when `shards` needs a shard key that the deployment lacks. */
export function requireShardKey(shards: number, shardKey: Uint8Array | null): void {
  if (shards > 1 && !shardKey) throw shardKeyMissing();
}

export function ledgerClient(stubFor: (name: string) => LedgerStub, timeoutMs: number, shardKey: Uint8Array | null): LedgerClient {
  // A failing ledger, not only a slow one, is 503 VERIFIER_UNAVAILABLE (withTimeout), on and off the decision path.
  const call = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "issuer ledger");
  const all = (issuer: string, shards: number) => ledgerNames(issuer, shards).map(stubFor);
  return {
    forDecision(issuer, nonce, shards) {
      requireShardKey(shards, shardKey);
      const stub = stubFor(ledgerName(issuer, nonce, shards, shardKey!));
      return { claim: (q) => call(stub.claim(q)), inspect: (q) => call(stub.inspect(q)) };
    },
    async revoke(issuer, shards, fingerprint, kid, at) {
      const every = await Promise.all(all(issuer, shards).map((stub) => call(stub.revoke(fingerprint, kid, at))));
      return { fingerprint, kid: every[0].kid, revoked_at: Math.min(...every.map((r) => r.revoked_at)) };
    },
    async forgetKeys(issuer, shards, fingerprints) {
      if (fingerprints.length === 0) return;
      // One call per shard carrying every key (not one per key and shard: 16 keys of a 64-shard issuer were 1,024 calls).
      await Promise.all(all(issuer, shards).map((stub) => call(stub.forgetKeys([...fingerprints]))));
    },
    async resetSequence(issuer, shards, audit) {
      const [first, ...rest] = all(issuer, shards);
      const elsewhere = await Promise.all(rest.map((stub) => call(stub.resetSequence(audit.fingerprint, null))));
      const highest_elsewhere = maxHighest(...elsewhere.map((r) => r.previous_highest));
      const { previous_highest } = await call(first.resetSequence(audit.fingerprint, { ...audit, highest_elsewhere }));
      return { ...audit, previous_highest };
    },
    revocations: (issuer, shards) => call(stubFor(ledgerNames(issuer, shards)[0]).revocations()),
    anchorState: (issuer, shards, before) => call(stubFor(ledgerNames(issuer, shards)[0]).anchorState(before)),
    stats: async (issuer, shards) => mergeStats(await Promise.all(all(issuer, shards).map((stub) => call(stub.stats())))),
    noteKeyUse: (issuer, shards, fingerprint, use) => call(stubFor(ledgerNames(issuer, shards)[0]).noteKeyUse(fingerprint, use)),
    keyUses: (issuer, shards, fingerprint, after) => call(stubFor(ledgerNames(issuer, shards)[0]).keyUses(fingerprint, after)),
    async withdraw(issuer, shards, withdrawals) {
      if (withdrawals.length === 0) return 0;
      requireShardKey(shards, shardKey);
      const byShard = new Map<string, Withdrawal[]>();
      for (const w of withdrawals) {
        const name = ledgerName(issuer, w.nonce, shards, shardKey!);
        const list = byShard.get(name) ?? [];
        list.push(w);
        byShard.set(name, list);
      }
      const calls: Promise<number>[] = [];
      for (const [name, list] of byShard) for (let i = 0; i < list.length; i += WITHDRAW_PAGE) calls.push(call(stubFor(name).withdraw(list.slice(i, i + WITHDRAW_PAGE))));
      return (await Promise.all(calls)).reduce((a, b) => a + b, 0);
    },
  };
}

export const RELYING_PARTY_CACHE_TTL_MS = 30_000;
const RELYING_PARTY_CACHE_SIZE = 256;

/**
 * Keyed by the bearer token itself, so a cached caller costs no digest. Holds only tokens that were
 * found: an unknown token is never remembered, so guessing grows nothing.
 */
export type RelyingPartyCache = Map<string, { at: number; party: RelyingParty }>;

export interface RelyingPartyStore {
  /** The party holding this bearer token (looked up by its SHA-256), or null. */
  byToken(token: string): Promise<RelyingParty | null>;
  get(name: string): Promise<RelyingParty | null>;
  /** Refused when the name, or the token, is already some party's. */
  create(party: RelyingParty): Promise<"created" | "name-taken" | "token-taken">;
  /** False when there was no such party. */
  delete(name: string): Promise<boolean>;
  /**
   * Gives the party a new token (by its SHA-256), keeping its name, audiences, floor and
   * registration, so everything kept under the party stays its own. The old token is refused from
   * the name record's write on (cached copies as for a delete).
   */
  rotate(name: string, tokenSha256: string): Promise<RelyingParty | "not-found" | "token-taken">;
  /**
   * One page of the parties, in name order: at most `limit` (1-RELYING_PARTY_PAGE_MAX), after the
   * page `cursor` ended; `cursor` is null on the last page. KV answers at most 1,000 keys a list,
   * and each party is one more read, so the parties are never read all at once.
   */
  list(page?: { limit?: number; cursor?: string | null }): Promise<{ parties: RelyingParty[]; cursor: string | null }>;
}

/** The most relying parties one page lists (each is one KV read beside the list). */
export const RELYING_PARTY_PAGE_MAX = 100;

const partyKey = (name: string) => `rp:${name}`;
const tokenKey = (tokenSha256: string) => `rp-token:${tokenSha256}`;

/**
 * Seconds a token a party gave up (deleted, or rotated out) stays taken: its record is kept, no
 * longer named by its party's `rp:<name>` (so it authenticates nothing), until KV expires it. Other
 * isolates cache a found token for RELYING_PARTY_CACHE_TTL_MS and KV takes up to ~60 s to reach
 * other locations: a token handed to another party (or to a new registration of the name) within
 * that time authenticated there as the party that gave it up, reading and writing its records.
 * Past both, it may be supplied again; the registration that gave it up may take
 * it back by a rotation at any time.
 */
export const RETIRED_TOKEN_TTL_SECONDS = 120;

/** The relying-party writes, each a KV read-check-write: run only by the AdminRegistry object, one at a time. */
export interface RelyingPartyWrites {
  create(party: RelyingParty): Promise<"created" | "name-taken" | "token-taken">;
  rotate(name: string, tokenSha256: string): Promise<{ before: RelyingParty; after: RelyingParty } | "not-found" | "token-taken">;
  delete(name: string): Promise<RelyingParty | null>;
}

export function kvRelyingPartyWrites(env: Env, timeoutMs: number): RelyingPartyWrites {
  const kv = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "relying-party store");
  const get = (key: string) => kv(env.ANCHORS.get<RelyingParty>(key, "json"));
  /**
   * Retires the party's token record, unless it is another party's: kept, still taken, for
   * RETIRED_TOKEN_TTL_SECONDS, then expired by KV. It authenticates nothing meanwhile, since the
   * party's `rp:<name>` no longer names it (deleted, or naming the new token). Before the writes
   * were serialised, two calls supplying one token at once could both pass the token check and
   * leave the token's record holding the other party: such a record is still left alone.
   */
  const dropTokenOf = async (party: RelyingParty): Promise<void> => {
    const held = await get(tokenKey(party.token_sha256));
    if (held && (held.name !== party.name || held.registration !== party.registration)) return;
    await kv(env.ANCHORS.put(tokenKey(party.token_sha256), JSON.stringify(party), { expirationTtl: RETIRED_TOKEN_TTL_SECONDS }));
  };
  return {
    async create(party) {
      if (await get(partyKey(party.name))) return "name-taken";
      if (await get(tokenKey(party.token_sha256))) return "token-taken";
      const value = JSON.stringify(party);
      await kv(Promise.all([env.ANCHORS.put(tokenKey(party.token_sha256), value), env.ANCHORS.put(partyKey(party.name), value)]));
      return "created";
    },
    async delete(name) {
      const party = await get(partyKey(name));
      if (!party) return null;
      await kv(Promise.all([dropTokenOf(party), env.ANCHORS.delete(partyKey(name))]));
      return party;
    },
    async rotate(name, tokenSha256) {
      const party = await get(partyKey(name));
      if (!party) return "not-found";
      const held = await get(tokenKey(tokenSha256));
      // A token this very registration gave up may come back to it (npm start frees DEMO_RP_TOKEN
      // and gives it back): an isolate that still caches it takes it as this party's, which it is.
      const ownRetired = held !== null && held.name === name && held.registration === party.registration && party.token_sha256 !== tokenSha256;
      if (held && !ownRetired) return "token-taken";
      const rotated: RelyingParty = { ...party, token_sha256: tokenSha256 };
      const value = JSON.stringify(rotated);
      // The new token's record first: the name's record then hands authority over in one write.
      await kv(env.ANCHORS.put(tokenKey(tokenSha256), value));
      await kv(env.ANCHORS.put(partyKey(name), value));
      await dropTokenOf(party);
      return { before: party, after: rotated };
    },
  };
}

/**
 * Relying parties in KV: `rp:<name>` and `rp-token:<sha256>` hold the same record. Found tokens
 * are cached per isolate for RELYING_PARTY_CACHE_TTL_MS; a delete evicts at once in this isolate
 * and reaches others within that time plus KV propagation.
 *
 * Registrations, rotations and deletes are KV read-check-writes, run one at a time by the
 * AdminRegistry object (`writes`), so a name or a token is handed to one party only. The name's
 * record stays the authority: a token authenticates only while `rp:<name>` still names it (same
 * token digest, same registration), which also covers records written before the writes were
 * serialised, when two registrations racing for one name could both write their token record.
 */
export function kvRelyingPartyStore(env: Env, timeoutMs: number, cache: RelyingPartyCache, writes: RelyingPartyWrites): RelyingPartyStore {
  // Every call that reads this store (all the relying-party routes) fails closed as 503 when KV fails, not only when it is slow.
  const kv = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "relying-party store");
  const get = (key: string) => kv(env.ANCHORS.get<RelyingParty>(key, "json"));
  /** Drops this isolate's cached copies of the party's token. */
  const forget = (party: RelyingParty) => {
    countCacheWrite(cache);
    for (const [token, hit] of cache) if (hit.party.token_sha256 === party.token_sha256) cache.delete(token);
  };
  return {
    async byToken(token) {
      const hit = cache.get(token);
      if (hit && Date.now() - hit.at < RELYING_PARTY_CACHE_TTL_MS) return hit.party;
      // A stale entry is dropped when its token comes back (the map holds at most 256 found tokens).
      if (hit) cache.delete(token);
      const evictions = cacheWrites(cache);
      const party = await get(tokenKey(await sha256Hex(token)));
      if (!party) return null;
      const named = await get(partyKey(party.name));
      if (!named || named.token_sha256 !== party.token_sha256 || named.registration !== party.registration) return null;
      // A delete or rotation this isolate served while the reads were in flight evicted the token:
      // what was read before it answers this call, but is not cached again (the
      // token was taken for 30 s more by the isolate that served the delete).
      if (cacheWrites(cache) !== evictions) return party;
      if (cache.size >= RELYING_PARTY_CACHE_SIZE) cache.clear();
      cache.set(token, { at: Date.now(), party });
      return party;
    },
    get: (name) => get(partyKey(name)),
    create: (party) => writes.create(party),
    async delete(name) {
      const party = await writes.delete(name);
      if (!party) return false;
      forget(party);
      return true;
    },
    async rotate(name, tokenSha256) {
      const rotated = await writes.rotate(name, tokenSha256);
      if (typeof rotated === "string") return rotated;
      forget(rotated.before);
      return rotated.after;
    },
    async list(page = {}) {
      const limit = Math.min(Math.max(1, page.limit ?? RELYING_PARTY_PAGE_MAX), RELYING_PARTY_PAGE_MAX);
      const listed = await kv(env.ANCHORS.list({ prefix: "rp:", limit, ...(page.cursor ? { cursor: page.cursor } : {}) }));
      const parties = await Promise.all(listed.keys.map((k) => get(k.name)));
      return { parties: parties.filter((p): p is RelyingParty => p !== null), cursor: listed.list_complete ? null : listed.cursor };
    },
  };
}

const decisionStats = (env: Env) => env.DECISION_STATS.get(env.DECISION_STATS.idFromName(DECISION_STATS_NAME));

/** Adds a batch of counts to the deployment's DecisionStats object; answers the issuers flagged for review (CCS 13.7). */
export async function flushDecisions(env: Env, batch: MetricsBatch, reviewThreshold: number): Promise<string[]> {
  return (await decisionStats(env).add(batch, reviewThreshold)) ?? [];
}

/** CCS 13.7 for one issuer: its lifetime verdict counts and whether they flag it for review. */
export async function readReview(env: Env, issuer: string, threshold: number, timeoutMs: number): Promise<{ flagged: boolean; allows: number; others: number; threshold: number }> {
  const tally = await withTimeout(decisionStats(env).tally(issuer), timeoutMs, "decision stats");
  return { flagged: allowOnly(tally, threshold), ...tally, threshold };
}

/** CCS 13.7: the issuers the counters flag for review now (what a flush answers, without a batch). */
export async function readFlagged(env: Env, threshold: number, timeoutMs: number): Promise<string[]> {
  return withTimeout(decisionStats(env).flagged(threshold), timeoutMs, "decision stats");
}

/** The deployment's aggregate of decision counts over the last `minutes`. */
export function readDecisionStats(env: Env, minutes: number, timeoutMs: number): Promise<DecisionStatsView> {
  return withTimeout(decisionStats(env).read(minutes), timeoutMs, "decision stats");
}

/** Per-minute series of the last `minutes` (the `labels` busiest labels) and the live chains started. */
export async function readStatusFigures(env: Env, minutes: number, labels: number, timeoutMs: number, reviewThreshold: number): Promise<{ series: DecisionSeries; chainsStarted: number; review: string[] }> {
  const stub = decisionStats(env);
  const [series, chainsStarted, review] = await withTimeout(Promise.all([stub.series(minutes, labels), stub.chainsStarted(), stub.flagged(reviewThreshold)]), timeoutMs, "decision stats");
  return { series, chainsStarted, review };
}

/** Sequence numbers of the issuing keys, one IssuingSequence object per key fingerprint. */
export interface SequenceSource {
  next(keyFingerprint: string): Promise<number>;
}

export function durableSequences(env: Env, timeoutMs: number): SequenceSource {
  return {
    next: (fingerprint) => withTimeout(env.ISSUING_SEQUENCE.get(env.ISSUING_SEQUENCE.idFromName(fingerprint)).next(), timeoutMs, "issuing sequence"),
  };
}
