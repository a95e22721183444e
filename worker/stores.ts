/**
 * Adapters from the protocol's ports to Workers storage: anchors in KV (cached briefly per
 * isolate) and replay state in IssuerLedger Durable Objects. Every call is bounded by a timeout
 * and any failure surfaces as VerifierUnavailable, so the verifier fails closed.
 */
import { anchorKvKey, pinnedIssuer, readAnchorRecord, type AnchorRecord, type PinnedIssuer } from "./protocol/anchors.js";
import type { LedgerStats, Revocation } from "../durable-objects/issuer-ledger.js";
import { ledgerName, ledgerNames, type ClaimQuery, type LedgerAnswer, type LedgerQuery, type ReplayLedger } from "./protocol/ledger.js";
import { withTimeout } from "./http.js";
import type { RelyingParty } from "./protocol/relying-parties.js";
import type { Env } from "./env.js";

export const ANCHOR_CACHE_TTL_MS = 30_000;

export type AnchorCache = Map<string, { at: number; record: AnchorRecord; pinned: PinnedIssuer }>;

export interface AnchorStore {
  get(issuer: string): Promise<AnchorRecord | null>;
  pinned(issuer: string): Promise<PinnedIssuer | null>;
  put(record: AnchorRecord): Promise<void>;
}

export function kvAnchorStore(env: Env, timeoutMs: number, cache: AnchorCache): AnchorStore {
  const remember = (record: AnchorRecord) => {
    const entry = { at: Date.now(), record, pinned: pinnedIssuer(record) };
    cache.set(record.issuer, entry);
    return entry;
  };
  const load = async (issuer: string) => {
    const hit = cache.get(issuer);
    if (hit && Date.now() - hit.at < ANCHOR_CACHE_TTL_MS) return hit;
    const raw = await withTimeout(env.ANCHORS.get(anchorKvKey(issuer), "json"), timeoutMs, "anchor store");
    return raw === null ? null : remember(readAnchorRecord(raw));
  };
  return {
    get: async (issuer) => (await load(issuer))?.record ?? null,
    pinned: async (issuer) => (await load(issuer))?.pinned ?? null,
    async put(record) {
      await withTimeout(env.ANCHORS.put(anchorKvKey(record.issuer), JSON.stringify(record)), timeoutMs, "anchor store");
      remember(record);
    },
  };
}

/** What the routes need of the ledgers, beyond the per-decision port. */
export interface LedgerClient {
  forDecision(issuer: string, nonce: string, shards: number): ReplayLedger;
  record(issuer: string, nonce: string, shards: number, codes: string[]): Promise<void>;
  /** Revokes in every shard; idempotent, so a failed fan-out is simply retried. */
  revoke(issuer: string, shards: number, kid: string, at: number): Promise<{ kid: string; revoked_at: number }>;
  /** The issuer's revocations: every shard holds every one, so the first shard answers. */
  revocations(issuer: string, shards: number): Promise<Revocation[]>;
  /** The issuer's state summed over its shards. */
  stats(issuer: string, shards: number): Promise<LedgerStats & { shards: number }>;
}

/** The minimal surface of an IssuerLedger stub, so tests can inject a failing one. */
export interface LedgerStub {
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
  record(codes: string[]): Promise<void>;
  revoke(kid: string, at: number): Promise<{ kid: string; revoked_at: number }>;
  stats(): Promise<LedgerStats>;
  revocations(): Promise<Revocation[]>;
}

export function durableLedgerStub(env: Env) {
  return (name: string): LedgerStub => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name)) as unknown as LedgerStub;
}

function mergeStats(all: LedgerStats[]): LedgerStats & { shards: number } {
  const counters: Record<string, number> = {};
  for (const s of all) for (const [code, n] of Object.entries(s.counters)) counters[code] = (counters[code] ?? 0) + n;
  const revoked = new Map<string, number>();
  for (const s of all) for (const r of s.revoked) revoked.set(r.kid, Math.min(r.revoked_at, revoked.get(r.kid) ?? Infinity));
  return {
    shards: all.length,
    nonces: all.reduce((n, s) => n + s.nonces, 0),
    database_bytes: all.reduce((n, s) => n + s.database_bytes, 0),
    window: { highest: Math.max(...all.map((s) => s.window.highest)) },
    revoked: [...revoked].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kid, revoked_at]) => ({ kid, revoked_at })),
    counters,
  };
}

export function ledgerClient(stubFor: (name: string) => LedgerStub, timeoutMs: number): LedgerClient {
  const call = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "issuer ledger");
  return {
    forDecision(issuer, nonce, shards) {
      const stub = stubFor(ledgerName(issuer, nonce, shards));
      return { claim: (q) => call(stub.claim(q)), inspect: (q) => call(stub.inspect(q)) };
    },
    record: (issuer, nonce, shards, codes) => call(stubFor(ledgerName(issuer, nonce, shards)).record(codes)),
    async revoke(issuer, shards, kid, at) {
      const all = await Promise.all(ledgerNames(issuer, shards).map((name) => call(stubFor(name).revoke(kid, at))));
      return { kid, revoked_at: Math.min(...all.map((r) => r.revoked_at)) };
    },
    revocations: (issuer, shards) => call(stubFor(ledgerNames(issuer, shards)[0]).revocations()),
    stats: async (issuer, shards) => mergeStats(await Promise.all(ledgerNames(issuer, shards).map((name) => call(stubFor(name).stats())))),
  };
}

export const RELYING_PARTY_CACHE_TTL_MS = 30_000;
const RELYING_PARTY_CACHE_SIZE = 256;

/** Holds only tokens that were found: an unknown token is never remembered, so guessing grows nothing. */
export type RelyingPartyCache = Map<string, { at: number; party: RelyingParty }>;

export interface RelyingPartyStore {
  /** The party whose token hashes to `tokenSha256`, or null. */
  byTokenHash(tokenSha256: string): Promise<RelyingParty | null>;
  get(name: string): Promise<RelyingParty | null>;
  /** False when the name is taken. */
  create(party: RelyingParty): Promise<boolean>;
  /** False when there was no such party. */
  delete(name: string): Promise<boolean>;
  list(): Promise<RelyingParty[]>;
}

const partyKey = (name: string) => `rp:${name}`;
const tokenKey = (tokenSha256: string) => `rp-token:${tokenSha256}`;

/**
 * Relying parties in KV: `rp:<name>` and `rp-token:<sha256>` hold the same record. Found tokens
 * are cached per isolate for RELYING_PARTY_CACHE_TTL_MS; a delete evicts at once in this isolate
 * and reaches others within that time plus KV propagation.
 */
export function kvRelyingPartyStore(env: Env, timeoutMs: number, cache: RelyingPartyCache): RelyingPartyStore {
  const kv = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "relying-party store");
  const get = (key: string) => kv(env.ANCHORS.get<RelyingParty>(key, "json"));
  return {
    async byTokenHash(hash) {
      const hit = cache.get(hash);
      if (hit && Date.now() - hit.at < RELYING_PARTY_CACHE_TTL_MS) return hit.party;
      const party = await get(tokenKey(hash));
      if (!party) return null;
      if (cache.size >= RELYING_PARTY_CACHE_SIZE) cache.clear();
      cache.set(hash, { at: Date.now(), party });
      return party;
    },
    get: (name) => get(partyKey(name)),
    async create(party) {
      if (await get(partyKey(party.name))) return false;
      const value = JSON.stringify(party);
      await kv(Promise.all([env.ANCHORS.put(tokenKey(party.token_sha256), value), env.ANCHORS.put(partyKey(party.name), value)]));
      return true;
    },
    async delete(name) {
      const party = await get(partyKey(name));
      if (!party) return false;
      await kv(Promise.all([env.ANCHORS.delete(tokenKey(party.token_sha256)), env.ANCHORS.delete(partyKey(name))]));
      cache.delete(party.token_sha256);
      return true;
    },
    async list() {
      const { keys } = await kv(env.ANCHORS.list({ prefix: "rp:" }));
      const parties = await Promise.all(keys.map((k) => get(k.name)));
      return parties.filter((p): p is RelyingParty => p !== null);
    },
  };
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
