/**
 * Review rv-106 (concurrency): a lookup that read KV before an admin write, and finished after the
 * write evicted this isolate's cached copy, must not put the stale record back in the cache.
 * README: a deleted (or rotated-out) relying-party token is refused "at once by the isolate that
 * served the delete"; "the isolate that served a pin caches the record that pin wrote". Before the
 * fix, a verification in flight across the write re-cached what it had read, for 30 s.
 */
import { describe, expect, it } from "vitest";
import { nodeEnv } from "../../cli/offline-env.js";
import { kvAnchorStore, kvRelyingPartyStore, kvRelyingPartyWrites, type AnchorCache, type RelyingPartyCache } from "../../worker/stores.js";
import { sha256Hex } from "../../worker/protocol/digest.js";
import { buildAnchorRecord } from "../../worker/protocol/anchors.js";
import { anchorFor, identity } from "../../vectors/ccs/factory.js";
import type { Env } from "../../worker/env.js";

/** The env's KV with reads of `key` held: each such read takes its value now and answers it when released. */
function holdingReads(env: Env, key: () => string | null) {
  const held: (() => void)[] = [];
  const kv = env.ANCHORS as unknown as { get: (k: string, t?: string) => Promise<unknown> };
  const get = kv.get.bind(kv);
  kv.get = (k: string, t?: string) => {
    if (k !== key()) return get(k, t);
    const read = get(k, t);
    return new Promise((resolve) => held.push(() => resolve(read)));
  };
  return { release: () => held.splice(0).forEach((go) => go()), pending: () => held.length };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("an admin write racing a lookup in flight in the same isolate", () => {
  // A delete, or a rotation that gives the party a new token: either way the old token is refused
  // by the next call on this isolate, though the lookup in flight is answered as it read.
  const writes = {
    deleted: async (store: ReturnType<typeof kvRelyingPartyStore>) => expect(await store.delete("racer")).toBe(true),
    "rotated out": async (store: ReturnType<typeof kvRelyingPartyStore>) =>
      expect(typeof (await store.rotate("racer", await sha256Hex("rv106-new-token-0123456789abcdef0123456")))).toBe("object"),
  };
  for (const [what, write] of Object.entries(writes)) {
    it(`a relying party's token ${what} while its lookup is in flight is not cached again: the next call is refused`, async () => {
      const { env } = nodeEnv({});
      const cache: RelyingPartyCache = new Map();
      let watched: string | null = null;
      const gate = holdingReads(env as Env, () => watched);
      const store = kvRelyingPartyStore(env as Env, 2000, cache, kvRelyingPartyWrites(env as Env, 2000));
      const token = "rv106-race-token-0123456789abcdef0123";
      const party = { name: "racer", audiences: ["https://relying-party.example"], token_sha256: await sha256Hex(token), created_at: 1, registration: "0123456789abcdef" };
      expect(await store.create(party)).toBe("created");
      watched = "rp:racer";
      const inFlight = store.byToken(token);
      while (gate.pending() === 0) await tick();
      watched = null;
      await write(store);
      gate.release();
      expect((await inFlight)?.name).toBe("racer"); // read before the write: answered as it was
      expect(await store.byToken(token)).toBeNull();
    });
  }

  it("an anchor read in flight across a pin's write does not replace the record that pin wrote in the cache", async () => {
    const { env } = nodeEnv({});
    const cache: AnchorCache = new Map();
    const store = kvAnchorStore(env as Env, 2000, cache);
    const k1 = await identity("rv106-anchor-race", "https://rv106-anchor-race.example", "k1");
    const k2 = await identity("rv106-anchor-race-2", "https://rv106-anchor-race.example", "k2");
    const built = async (id: typeof k1) => {
      const b = await buildAnchorRecord(anchorFor(id), 1);
      if (b.kind !== "built") throw new Error(JSON.stringify(b));
      return b.record;
    };
    await (env as Env).ANCHORS.put(`anchor:${k1.issuer}`, JSON.stringify(await built(k1))); // pinned elsewhere: not cached here
    let watched: string | null = `anchor:${k1.issuer}`;
    const gate = holdingReads(env as Env, () => watched);
    const inFlight = store.pinned(k1.issuer);
    while (gate.pending() === 0) await tick();
    watched = null;
    await store.put(await built(k2)); // the key rotation this isolate served
    gate.release();
    expect((await inFlight)?.keys.map((k) => k.kid)).toEqual(["k1"]); // read before the pin: answered as it was
    expect((await store.pinned(k1.issuer))?.keys.map((k) => k.kid)).toEqual(["k2"]);
  });
});
