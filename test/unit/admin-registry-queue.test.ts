/**
 * AdminRegistry's queue against a KV call that outlives its timeout (review rv-74): the call that
 * made it fails 503, but the write is not cancelled and can land later; the next call must not
 * read before it lands, or the two are not one at a time any more.
 */
import { describe, expect, it, vi } from "vitest";
import { PendingKv, serialAdminRegistry } from "../../worker/admin-registry.js";
import { kvAnchorStore, kvRelyingPartyWrites, type LedgerClient } from "../../worker/stores.js";
import type { Env } from "../../worker/env.js";
import type { RelyingParty } from "../../worker/protocol/relying-parties.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A KV namespace in memory whose first `slowPuts` writes take `delayMs` to land. */
function slowKv(slowPuts: number, delayMs: number) {
  const data = new Map<string, string>();
  let slow = slowPuts;
  return {
    data,
    async get(key: string, type?: string) {
      const v = data.get(key);
      return v === undefined ? null : type === "json" ? JSON.parse(v) : v;
    },
    async put(key: string, value: string) {
      if (slow > 0) {
        slow--;
        await sleep(delayMs);
      }
      data.set(key, value);
    },
    async delete(key: string) {
      data.delete(key);
    },
    async list() {
      return { keys: [], list_complete: true };
    },
  };
}

const party = (token: string): RelyingParty => ({ name: "queue-party", audiences: ["https://relying-party.example"], token_sha256: token, created_at: 0, registration: token.slice(0, 16) });

describe("a registry call whose KV write timed out", () => {
  it("holds the next call until that write has landed: a name is still given to one party", async () => {
    const kv = slowKv(2, 150);
    const pending = new PendingKv(2_000);
    const timeout = 20;
    const registry = serialAdminRegistry(() => {
      const env = { ANCHORS: pending.track(kv) } as unknown as Env;
      return { anchors: kvAnchorStore(env, timeout, new Map()), ledgers: {} as LedgerClient, parties: kvRelyingPartyWrites(env, timeout) };
    }, pending);
    const first = registry.createParty(party("a".repeat(64)));
    const second = registry.createParty(party("b".repeat(64)));
    await expect(first).rejects.toThrow(/unavailable/);
    const answered = await second;
    await sleep(300);
    const held = JSON.parse(kv.data.get("rp:queue-party")!) as RelyingParty;
    // Before: the second call read before the first one's writes landed, answered "created", and was then written over.
    expect(answered).toBe("name-taken");
    expect(held.token_sha256).toBe("a".repeat(64));
  });
});

describe("a re-pin of a sharded issuer (review rv-80)", () => {
  it("tells each ledger shard once of every key it unpinned, not once per key and shard", async () => {
    const { generateKeyPairSync } = await import("node:crypto");
    const { buildAnchorRecord } = await import("../../worker/protocol/anchors.js");
    const { commitPin } = await import("../../worker/admin-registry.js");
    const { ledgerClient } = await import("../../worker/stores.js");
    const issuer = "https://sharded-repin.example";
    const pin = async (prefix: string) => {
      const keys = Array.from({ length: 16 }, (_, i) => ({ kid: `${prefix}${i}`, alg: "Ed25519", public_key: generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" }).x! }));
      const built = await buildAnchorRecord({ issuer, ledger_shards: 64, keys }, 1_000);
      if (built.kind !== "built") throw new Error(built.errors.join("; "));
      return built.record;
    };
    const kv = slowKv(0, 0);
    const anchors = kvAnchorStore({ ANCHORS: kv } as unknown as Env, 1_000, new Map());
    const calls: { shard: string; fingerprints: string[] }[] = [];
    const stub = (shard: string) => ({
      forgetKey: async (fingerprint: string) => void calls.push({ shard, fingerprints: [fingerprint] }),
      forgetKeys: async (fingerprints: string[]) => void calls.push({ shard, fingerprints }),
    });
    const ledgers = ledgerClient(stub as never, 1_000, null);
    const first = await pin("a");
    expect((await commitPin(anchors, ledgers, first, 1_000)).ok).toBe(true);
    expect(calls).toEqual([]);
    const second = await commitPin(anchors, ledgers, await pin("b"), 2_000);
    expect(second.ok).toBe(true);
    // Before: 16 keys x 64 shards = 1,024 ledger calls in one admin write, every other admin write queued behind them.
    expect(calls.length).toBe(64);
    expect(new Set(calls.map((c) => c.shard)).size).toBe(64);
    const unpinned = first.keys.map((k) => k.fingerprint).sort();
    for (const c of calls) expect([...c.fingerprints].sort()).toEqual(unpinned);
  });
});

describe("a registry call whose KV call never settles", () => {
  it("holds the next call up to the bound once, not every call after it: the queue is not wedged", async () => {
    const kv = slowKv(0, 0);
    // The first put never settles (as a KV call lost in flight would not).
    let hung = true;
    const put = kv.put.bind(kv);
    kv.put = (key: string, value: string) => {
      if (hung) {
        hung = false;
        return new Promise<void>(() => {});
      }
      return put(key, value);
    };
    const bound = 300;
    const pending = new PendingKv(bound);
    const timeout = 20;
    const registry = serialAdminRegistry(() => {
      const env = { ANCHORS: pending.track(kv) } as unknown as Env;
      return { anchors: kvAnchorStore(env, timeout, new Map()), ledgers: {} as LedgerClient, parties: kvRelyingPartyWrites(env, timeout) };
    }, pending);
    // The clock is faked, so what is asserted is which calls a timer holds, not how long anything took.
    vi.useFakeTimers();
    try {
      const first = expect(registry.createParty(party("a".repeat(64)))).rejects.toThrow(/unavailable/);
      await vi.advanceTimersByTimeAsync(timeout);
      await first;
      // The next call waits for the hung write, up to the bound from its first wait …
      let nextDone = false;
      const next = registry.deleteParty("queue-party").then(() => (nextDone = true));
      await vi.advanceTimersByTimeAsync(bound - 1);
      expect(nextDone).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await next;
      // … but the calls after it do not wait for it again: each answers with no timer run.
      for (let i = 0; i < 3; i++) {
        let done = false;
        const later = registry.deleteParty("queue-party").then(() => (done = true));
        await vi.advanceTimersByTimeAsync(0);
        // Before: every later call waited the bound again for the write that never settled.
        expect(done).toBe(true);
        await later;
      }
    } finally {
      vi.useRealTimers();
    }
  });
});
