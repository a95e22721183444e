/**
 * The Worker's bindings in memory, so the very same Hono app runs under plain Node: the CLI's
 * offline verifier and the Node-side tests use it. Nothing is durable; a process is one world.
 */
import type { Env } from "../worker/env.js";
import { kvAnchorStore, kvRelyingPartyWrites, ledgerClient, type LedgerStub } from "../worker/stores.js";
import { serialAdminRegistry } from "../worker/admin-registry.js";
import { dependencyTimeout, ledgerShardKey } from "../worker/config.js";
import { memoryLedger } from "../worker/protocol/memory-ledger.js";
import { memoryJournal, queryRows } from "../worker/protocol/journal/memory.js";

/** A ReceiptJournal shard in memory, with the Durable Object's RPC surface. */
function memoryJournalObject() {
  const journal = memoryJournal();
  return {
    ...journal,
    query: (q: Parameters<typeof queryRows>[1]) => queryRows(journal.storage.rows.values(), q),
    stats: () => ({ records: journal.storage.rows.size, entries: [...journal.storage.entries.values()].flat().length, rows_written: 0 }),
    // Offline, nothing is admitted by intake, so no admission is in flight under any key.
    revokeKey: () => [],
    marksFor: () => [],
    delegatedReceipts: () => [],
    markOf: () => null,
  };
}

/** A RECEIPT_JOURNAL namespace in memory: one journal object per name, made on first use. */
export function memoryJournalNamespace() {
  const journals = new Map<string, ReturnType<typeof memoryJournalObject>>();
  return { idFromName: (name: string) => name, get: (name: string) => journals.get(name) ?? journals.set(name, memoryJournalObject()).get(name)! };
}

export function nodeEnv(vars: Partial<Env> = {}) {
  const kv = new Map<string, string>();
  /** Keys put with an expirationTtl, and when KV would expire them (ms): read as absent from then, as KV does. */
  const expiries = new Map<string, number>();
  const live = (key: string) => {
    const at = expiries.get(key);
    if (at !== undefined && Date.now() >= at) {
      kv.delete(key);
      expiries.delete(key);
    }
    return kv.get(key);
  };
  const ledgers = new Map<string, ReturnType<typeof memoryLedger>>();
  const ledger = (name: string) => ledgers.get(name) ?? ledgers.set(name, memoryLedger()).get(name)!;
  const env = {
    ANCHORS: {
      get: async (key: string, type?: string) => {
        const v = live(key);
        return v === undefined ? null : type === "json" ? JSON.parse(v) : v;
      },
      put: async (key: string, value: string, options?: { expirationTtl?: number }) => {
        kv.set(key, value);
        if (options?.expirationTtl !== undefined) expiries.set(key, Date.now() + options.expirationTtl * 1000);
        else expiries.delete(key);
      },
      delete: async (key: string) => {
        kv.delete(key);
        expiries.delete(key);
      },
      // As KV lists: at most `limit` (1,000) keys in key order a page, `cursor` to go on from, `list_complete` on the last.
      list: async ({ prefix = "", limit = 1000, cursor }: { prefix?: string; limit?: number; cursor?: string } = {}) => {
        const all = [...kv.keys()].filter((k) => k.startsWith(prefix) && live(k) !== undefined).sort();
        const start = cursor ? Number(cursor) : 0;
        const end = Math.min(all.length, start + limit);
        return { keys: all.slice(start, end).map((name) => ({ name })), list_complete: end >= all.length, ...(end < all.length ? { cursor: String(end) } : {}) };
      },
    },
    // Decision counts are operational figures of a deployment: offline they are dropped.
    DECISION_STATS: { idFromName: () => ({}), get: () => ({ add: async () => [], tally: async () => ({ allows: 0, others: 0 }), flagged: async () => [] }) },
    RECEIPT_JOURNAL: memoryJournalNamespace(),
    AUDIENCES: "https://relying-party.example,https://second-party.example",
    ADMIN_TOKEN: "test-admin-token",
    ...vars,
  } as unknown as Env;
  const ledgerStub = () => (name: string): LedgerStub => {
    const l = ledger(name);
    return {
      claim: (q) => l.claim(q),
      inspect: (q) => l.inspect(q),
      revoke: async (fingerprint, kid, at) => l.revoke(fingerprint, kid, at),
      revocations: async () => l.revocations(),
      forgetKeys: async (fingerprints) => { for (const f of fingerprints) l.forgetKey(f); },
      resetSequence: async (fingerprint, audit) => l.resetSequence(fingerprint, audit),
      anchorState: async (before) => ({ revoked: l.revocations(), sequence_resets: l.sequenceResets(before) }),
      stats: async () => ({ nonces: l.nonces(), database_bytes: 0, rows_written: 0, windows: [], revoked: l.revocations() }),
      noteKeyUse: async (fingerprint, use) => l.noteKeyUse(fingerprint, use),
      keyUses: async (fingerprint, after) => l.keyUses(fingerprint, after),
      withdraw: async (withdrawals) => l.withdraw(withdrawals),
    };
  };
  // Admin writes run one at a time, as the AdminRegistry object runs them, over this process's KV and ledgers.
  const registry = serialAdminRegistry(() => {
    const timeout = dependencyTimeout(env);
    return { anchors: kvAnchorStore(env, timeout, new Map()), ledgers: ledgerClient(ledgerStub(), timeout, ledgerShardKey(env)), parties: kvRelyingPartyWrites(env, timeout) };
  });
  (env as unknown as Record<string, unknown>).ADMIN_REGISTRY = { idFromName: () => ({}), get: () => registry };
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
  return { env, ledgerStub, ctx };
}
