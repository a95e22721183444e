/**
 * AdminRegistry's queue against a KV call that outlives its timeout (review rv-74): the call that
 * made it fails 503, but the write is not cancelled and can land later; the next call must not
 * read before it lands, or the two are not one at a time any more.
 */
import { describe, expect, it } from "vitest";
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
    await expect(registry.createParty(party("a".repeat(64)))).rejects.toThrow(/unavailable/);
    // The next call waits for the hung write, up to the bound …
    const held = Date.now();
    await registry.deleteParty("queue-party");
    expect(Date.now() - held).toBeGreaterThanOrEqual(bound - 50);
    // … but the calls after it do not wait for it again: each answers in far less than the bound.
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      await registry.deleteParty("queue-party");
      // Before: every later call waited the bound again for the write that never settled (≥ 300 ms each).
      expect(Date.now() - started).toBeLessThan(bound / 2);
    }
  });
});
