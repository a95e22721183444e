/**
 * Adapters from the protocol's ports to Workers storage: anchors in KV (cached briefly per
 * isolate) and replay state in IssuerLedger Durable Objects. Every call is bounded by a timeout
 * and any failure surfaces as VerifierUnavailable, so the verifier fails closed.
 */
import { anchorKvKey, readAnchorRecord, trustedKeys, type AnchorRecord, type TrustedKey } from "./protocol/anchors.js";
import type { LedgerStats } from "../durable-objects/issuer-ledger.js";
import type { ClaimQuery, LedgerAnswer, LedgerQuery, ReplayLedger } from "./protocol/ledger.js";
import { withTimeout } from "./http.js";
import type { Env } from "./env.js";

export const ANCHOR_CACHE_TTL_MS = 30_000;

export interface AnchorStore {
  get(issuer: string): Promise<AnchorRecord | null>;
  keys(issuer: string): Promise<TrustedKey[] | null>;
  put(record: AnchorRecord): Promise<void>;
}

export function kvAnchorStore(env: Env, timeoutMs: number, cache: Map<string, { at: number; record: AnchorRecord; keys: TrustedKey[] }>): AnchorStore {
  const load = async (issuer: string) => {
    const hit = cache.get(issuer);
    if (hit && Date.now() - hit.at < ANCHOR_CACHE_TTL_MS) return hit;
    const raw = await withTimeout(env.ANCHORS.get(anchorKvKey(issuer), "json"), timeoutMs, "anchor store");
    if (raw === null) return null;
    const record = readAnchorRecord(raw);
    const entry = { at: Date.now(), record, keys: trustedKeys(record) };
    cache.set(issuer, entry);
    return entry;
  };
  return {
    get: async (issuer) => (await load(issuer))?.record ?? null,
    keys: async (issuer) => (await load(issuer))?.keys ?? null,
    async put(record) {
      await withTimeout(env.ANCHORS.put(anchorKvKey(record.issuer), JSON.stringify(record)), timeoutMs, "anchor store");
      cache.set(record.issuer, { at: Date.now(), record, keys: trustedKeys(record) });
    },
  };
}

/** What the routes need of the ledgers, beyond the per-decision port. */
export interface LedgerClient {
  forDecision(issuer: string, nonce: string): ReplayLedger;
  record(issuer: string, codes: string[]): Promise<void>;
  revoke(issuer: string, kid: string, at: number): Promise<{ kid: string; revoked_at: number }>;
  stats(issuer: string): Promise<LedgerStats>;
}

/** The minimal surface of an IssuerLedger stub, so tests can inject a failing one. */
export interface LedgerStub {
  claim(q: ClaimQuery): Promise<LedgerAnswer>;
  inspect(q: LedgerQuery): Promise<LedgerAnswer>;
  record(codes: string[]): Promise<void>;
  revoke(kid: string, at: number): Promise<{ kid: string; revoked_at: number }>;
  stats(): Promise<LedgerStats>;
}

export function durableLedgerStub(env: Env) {
  return (name: string): LedgerStub => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name)) as unknown as LedgerStub;
}

export function ledgerClient(stubFor: (name: string) => LedgerStub, timeoutMs: number): LedgerClient {
  const call = <T>(work: Promise<T>) => withTimeout(work, timeoutMs, "issuer ledger");
  return {
    forDecision(issuer) {
      const stub = stubFor(issuer);
      return { claim: (q) => call(stub.claim(q)), inspect: (q) => call(stub.inspect(q)) };
    },
    record: (issuer, codes) => call(stubFor(issuer).record(codes)),
    revoke: (issuer, kid, at) => call(stubFor(issuer).revoke(kid, at)),
    stats: (issuer) => call(stubFor(issuer).stats()),
  };
}
