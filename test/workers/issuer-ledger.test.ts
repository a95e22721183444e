import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { IssuerLedger } from "../../durable-objects/issuer-ledger.js";
import type { SequencePolicy } from "../../worker/protocol/ledger.js";
import { databaseRows, pastRetention } from "../support/ledger-rows.js";
import { pagesResets } from "../support/sequence-resets.js";

const ledger = (name: string) => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name));
const K1 = "1".repeat(64);
const K2 = "2".repeat(64);
const q = (nonce: string, sequence: number | null, retainUntil: number, fingerprint: string | null = K1, sequencePolicy: SequencePolicy = "window") => ({
  issuer: "https://ledger.example", nonce: nonce.padStart(32, "0"), sequence, fingerprint, sequencePolicy, retainUntil, retryTag: null as string | null,
});

describe("IssuerLedger", () => {
  it("claims no nonce whose retention has ended by its own clock: a purge could not have kept it, so a replay could not be told", async () => {
    const l = ledger("ledger-retention-ended");
    const now = Date.now() / 1000;
    const ended = await l.claim(q("x1", 1, now - 0.001));
    expect(ended.consumed).toBe(false);
    expect(ended.expired).toMatch(/retention/);
    expect((await l.stats()).nonces).toBe(0);
    // The receipt a purge released: claimed while retained, purged, then presented again at its boundary.
    expect((await l.claim(q("x2", 2, now + 1))).consumed).toBe(true);
    await pastRetention(now + 1);
    await runDurableObjectAlarm(l);
    expect((await l.stats()).nonces).toBe(0);
    const again = await l.claim(q("x2", 3, now + 1));
    expect([again.consumed, again.replay, typeof again.expired]).toEqual([false, null, "string"]);
  });

  it("claims a nonce once; a second claim is a replay and changes nothing", async () => {
    const l = ledger("ledger-claim");
    expect(await l.claim(q("a", 1, 2e9))).toEqual({ revoked: false, replay: null, consumed: true });
    const again = await l.claim(q("a", 2, 2e9));
    expect(again.consumed).toBe(false);
    expect(again.replay).toMatch(/already presented/);
    expect((await l.stats()).windows).toEqual([{ fingerprint: K1, highest: 1 }]);
  });

  it("a claim retried under the same retry tag is answered as consumed by it, writes nothing; any other tag is a replay", async () => {
    const l = ledger("ledger-retry");
    const tagged = { ...q("r", 7, 2e9), retryTag: "a".repeat(32) };
    expect(await l.claim(tagged)).toEqual({ revoked: false, replay: null, consumed: true });
    const before = await l.stats();
    expect(await l.claim(tagged)).toEqual({ revoked: false, replay: null, consumed: true, retried: true });
    expect(await l.stats()).toEqual(before);
    expect((await l.claim({ ...tagged, retryTag: "b".repeat(32) })).replay).toMatch(/already presented/);
    expect((await l.claim({ ...tagged, retryTag: null })).replay).toMatch(/already presented/);
  });

  it("under the window policy, says which sequence rule was broken", async () => {
    const l = ledger("ledger-seq");
    await l.claim(q("b1", 5000, 2e9));
    expect((await l.claim(q("b2", 5000, 2e9))).replay).toBe("sequence 5000 was already presented");
    expect((await l.claim(q("b3", 3976, 2e9))).replay).toMatch(/older than the window/);
    expect((await l.claim(q("b4", 3977, 2e9))).consumed).toBe(true);
  });

  it("keeps sequences per key: one key's sequences never refuse another key's", async () => {
    const l = ledger("ledger-per-key");
    expect((await l.claim(q("k1", Number.MAX_SAFE_INTEGER, 2e9, K1))).consumed).toBe(true);
    expect((await l.claim(q("k2", 1, 2e9, K2))).consumed).toBe(true);
    expect((await l.claim(q("k3", 1, 2e9, K1))).replay).toMatch(/older than the window/);
    expect((await l.claim(q("k4", 1, 2e9, K2))).replay).toBe("sequence 1 was already presented");
  });

  it("by default refuses a sequence repeated among retained nonces of the same key, keeps no window, and admits it again once that nonce is purged", async () => {
    const l = ledger("ledger-repeat");
    const now = Date.now() / 1000;
    expect((await l.claim(q("r1", 2 ** 53 - 1, now + 1, K1, "repeat"))).consumed).toBe(true);
    expect((await l.claim(q("r2", 2 ** 53 - 1, 2e9, K1, "repeat"))).replay).toBe(`sequence ${2 ** 53 - 1} was already presented`);
    expect((await l.claim(q("r3", 1, 2e9, K1, "repeat"))).consumed).toBe(true);
    expect((await l.claim(q("r4", 2 ** 53 - 1, 2e9, K2, "repeat"))).consumed).toBe(true);
    expect((await l.claim(q("r5", null, 2e9, K1, "repeat"))).consumed).toBe(true);
    expect((await l.claim(q("r6", null, 2e9, K1, "repeat"))).consumed).toBe(true);
    expect((await l.stats()).windows).toEqual([]);
    await pastRetention(now + 1);
    await runDurableObjectAlarm(l);
    expect((await l.claim(q("r7", 2 ** 53 - 1, 2e9, K1, "repeat"))).consumed).toBe(true);
  });

  it("refuses a revoked key atomically by fingerprint: the nonce stays unclaimed, another key is unaffected", async () => {
    const l = ledger("ledger-revoked");
    expect(await l.revoke(K1, "k1", 100)).toEqual({ fingerprint: K1, kid: "k1", revoked_at: 100 });
    expect(await l.claim(q("c", 1, 2e9))).toEqual({ revoked: true, replay: null, consumed: false });
    expect((await l.stats()).nonces).toBe(0);
    expect((await l.claim(q("c", 1, 2e9, K2))).consumed).toBe(true);
    expect((await l.revoke(K1, "other-kid", 200)).revoked_at).toBe(100);
  });

  it("a refused claim (replay, revoked key) writes nothing", async () => {
    const l = ledger("ledger-refusal-writes-nothing");
    await l.claim(q("w1", 10, 2e9));
    await l.revoke(K2, "k2", 1);
    const before = await databaseRows(l);
    expect((await l.claim(q("w1", 11, 2e9))).replay).toMatch(/already presented/);
    expect((await l.claim(q("w2", 10, 2e9))).replay).toMatch(/already presented/);
    expect((await l.claim(q("w3", 12, 2e9, K2))).revoked).toBe(true);
    expect(await databaseRows(l)).toEqual(before);
  });

  it("forgetting a key (unpinned) and resetting it drop its sequence state; the reset is audited with the highest it held", async () => {
    const l = ledger("ledger-forget");
    await l.claim(q("f1", 9000, 2e9));
    await l.claim(q("f2", 7, 2e9, K2, "repeat"));
    await l.forgetKey(K1);
    expect((await l.claim(q("f3", 1, 2e9))).consumed).toBe(true);
    expect((await l.claim(q("f1", 1, 2e9))).replay).toMatch(/nonce/);
    expect(await l.resetSequence(K2, { fingerprint: K2, kid: "k2", at: 50, reason: "issuer restarted its counter", by: "admin", highest_elsewhere: 12 })).toEqual({ previous_highest: 12 });
    expect(await l.resetSequence(K1, null)).toEqual({ previous_highest: 1 });
    expect((await l.claim(q("f4", 7, 2e9, K2, "repeat"))).consumed).toBe(true);
    expect(await l.sequenceResets(null)).toEqual({ resets: [{ fingerprint: K2, kid: "k2", at: 50, reason: "issuer restarted its counter", by: "admin", previous_highest: 12 }], total: 1, next: null });
  });

  it("answers the newest SEQUENCE_RESETS_PAGE sequence resets, oldest first, with their total and a cursor (at, rowid) to the older ones", async () => {
    await pagesResets(ledger("ledger-resets-paged"));
  });

  it("forgetKeys drops the sequence state of every key it is given, in one call (a re-pin's unpinned keys, review rv-80)", async () => {
    const l = ledger("ledger-forget-keys");
    await l.claim(q("g1", 9000, 2e9));
    await l.claim(q("g2", 8000, 2e9, K2));
    await l.forgetKeys([K1, K2, K1]);
    expect((await l.claim(q("g3", 1, 2e9))).consumed).toBe(true);
    expect((await l.claim(q("g4", 1, 2e9, K2))).consumed).toBe(true);
  });

  it("purges nonces whose retention passed when its alarm runs, keeping the rest", async () => {
    const l = ledger("ledger-purge");
    const now = Date.now() / 1000;
    await l.claim(q("d1", 1, now + 1));
    await l.claim(q("d2", 2, now + 3600));
    expect((await l.stats()).nonces).toBe(2);
    await pastRetention(now + 1);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    expect((await l.stats()).nonces).toBe(1);
    expect((await l.claim(q("d2", 3, now + 3600))).replay).toMatch(/already presented/);
    const next = await runInDurableObject(l, (_o: IssuerLedger, state) => state.storage.getAlarm());
    expect(next).toBeGreaterThan(Date.now());
  });

  it("keeps its state across a restart of the object", async () => {
    const id = env.ISSUER_LEDGER.idFromName("ledger-restart");
    await env.ISSUER_LEDGER.get(id).claim(q("e", 7, 2e9));
    await env.ISSUER_LEDGER.get(id).revoke(K2, "k9", 1);
    await abortAllDurableObjects();
    const after = env.ISSUER_LEDGER.get(id);
    expect((await after.claim(q("e", 8, 2e9))).replay).toMatch(/already presented/);
    expect((await after.stats()).revoked).toEqual([{ fingerprint: K2, kid: "k9", revoked_at: 1 }]);
    expect((await after.claim(q("f", 7, 2e9))).replay).toBe("sequence 7 was already presented");
    expect((await after.claim(q("g", 7, 2e9, K2))).revoked).toBe(true);
  });
});
