/**
 * One row written per accepted IssuerLedger claim: the default policy's sequences are held in
 * memory instead of a unique index, the strict window is written at a key's first claim and by
 * the purge. Restarts are real (abortAllDurableObjects) or a fresh instance over the same storage.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { IssuerLedger } from "../../durable-objects/issuer-ledger.js";
import { keyTag, type ClaimQuery, type SequencePolicy } from "../../worker/protocol/ledger.js";
import { databaseRows, pastRetention } from "../support/ledger-rows.js";

const ledger = (name: string) => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name));
type Ledger = ReturnType<typeof ledger>;
const K1 = "1".repeat(64);
const K2 = "2".repeat(64);
const K3 = "3".repeat(64);
const q = (nonce: string, sequence: number | null, fingerprint: string | null = K1, sequencePolicy: SequencePolicy = "repeat", retainUntil = 2e9): ClaimQuery => ({
  issuer: "https://one-row.example", nonce: nonce.padStart(32, "0"), sequence, fingerprint, sequencePolicy, retainUntil, retryTag: null,
});

/** A claim's answer and the rows it wrote (SQLite's count, as `stats().rows_written` keeps it). */
async function claimed(l: Ledger, query: ClaimQuery) {
  const before = (await l.stats()).rows_written;
  const answer = await l.claim(query);
  return { consumed: answer.consumed, replay: answer.replay, revoked: answer.revoked, rows: (await l.stats()).rows_written - before };
}

/** The sequences the live instance holds in memory and those on its nonce rows, as sorted "tag:sequence". */
const heldAndStored = (l: Ledger) =>
  runInDurableObject(l, (o: IssuerLedger, state) => {
    const held = o["heldSequences"];
    return {
      held: held === null ? null : [...held].flatMap(([tag, sequences]) => [...sequences].map((s) => `${tag}:${s}`)).sort(),
      stored: state.storage.sql.exec<{ key_tag: number; sequence: number }>("SELECT key_tag, sequence FROM nonces WHERE sequence IS NOT NULL").toArray().map((r) => `${r.key_tag}:${r.sequence}`).sort(),
    };
  });

/** The key's window as the live instance holds it, and as a fresh instance over the same storage rebuilds it. */
const windowNowAndRebuilt = (l: Ledger, fingerprint: string) =>
  runInDurableObject(l, (o: IssuerLedger, state) => {
    const show = ({ highest, bitmap }: { highest: number; bitmap: bigint }) => ({ highest, bitmap: bitmap.toString(16) });
    return { now: show(o["windowOf"](fingerprint)), rebuilt: show(new IssuerLedger(state, env)["windowOf"](fingerprint)) };
  });

const restarted = async (name: string) => {
  await abortAllDurableObjects();
  return ledger(name);
};

describe("IssuerLedger: one row written per accepted claim", () => {
  it("an accepted claim writes 1 row (keyed or not); a refused one 0, and the table has no index on the sequence", async () => {
    const l = ledger("one-row-repeat");
    await l.revoke(K3, "k3", 1);
    expect(await claimed(l, q("a1", 1))).toEqual({ consumed: true, replay: null, revoked: false, rows: 1 });
    expect(await claimed(l, q("a2", null))).toMatchObject({ consumed: true, rows: 1 });
    expect(await claimed(l, q("a3", 2, null))).toMatchObject({ consumed: true, rows: 1 });
    expect(await claimed(l, { ...q("a4", 3), retryTag: "t".repeat(32), answer: "{}" })).toMatchObject({ consumed: true, rows: 1 });
    const before = await databaseRows(l);
    expect(await claimed(l, q("a1", 9))).toMatchObject({ consumed: false, replay: `nonce ${"a1".padStart(32, "0")} was already presented`, rows: 0 });
    expect(await claimed(l, q("a5", 1))).toMatchObject({ consumed: false, replay: "sequence 1 was already presented", rows: 0 });
    expect(await claimed(l, q("a6", 1, K3))).toMatchObject({ consumed: false, revoked: true, rows: 0 });
    expect(await databaseRows(l)).toEqual(before);
    const indexes = await runInDurableObject(l, (_o: IssuerLedger, state) => state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'nonces' AND sql IS NOT NULL").toArray());
    expect(indexes).toEqual([]);
  });

  it("a repeated sequence of a key is refused in the same instance and after a restart; another key may use it", async () => {
    let l = ledger("one-row-restart");
    expect((await l.claim(q("b1", 42))).consumed).toBe(true);
    expect((await l.claim(q("b2", 42))).replay).toBe("sequence 42 was already presented");
    expect((await l.claim(q("b3", 42, K2))).consumed).toBe(true);
    const fresh = await runInDurableObject(l, (_o: IssuerLedger, state) => new IssuerLedger(state, env).claim(q("b4", 42)));
    expect(fresh).toEqual({ revoked: false, replay: "sequence 42 was already presented", consumed: false });
    l = await restarted("one-row-restart");
    expect(await claimed(l, q("b5", 42))).toMatchObject({ replay: "sequence 42 was already presented", rows: 0 });
    expect((await l.claim(q("b6", 42, K2))).replay).toBe("sequence 42 was already presented");
    expect(await claimed(l, q("b7", 43))).toMatchObject({ consumed: true, rows: 1 });
    const { held, stored } = await heldAndStored(l);
    expect(held).toEqual(stored);
    expect(stored).toEqual([`${keyTag(K1)}:42`, `${keyTag(K1)}:43`, `${keyTag(K2)}:42`].sort());
  });

  it("once a nonce is purged its sequence may come back (policy repeat), and memory agrees with the table", async () => {
    const l = ledger("one-row-purge");
    // Claims are taken only while retained by the ledger's clock: these end shortly, then the purge runs.
    const past = Date.now() / 1000 + 0.3;
    await l.claim(q("c1", 1, K1, "repeat", past));
    await l.claim(q("c2", 2, K1, "repeat", past));
    await l.claim(q("c3", 3));
    await l.claim(q("c4", 1, K2, "repeat", past));
    expect((await l.claim(q("c5", 1))).replay).toBe("sequence 1 was already presented");
    expect(await heldAndStored(l)).toMatchObject({ stored: [`${keyTag(K1)}:1`, `${keyTag(K1)}:2`, `${keyTag(K1)}:3`, `${keyTag(K2)}:1`].sort() });
    await pastRetention(past);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    const { held, stored } = await heldAndStored(l);
    expect(held).toEqual(stored);
    expect(stored).toEqual([`${keyTag(K1)}:3`]);
    expect(await claimed(l, q("c6", 1))).toMatchObject({ consumed: true, rows: 1 });
    expect((await l.claim(q("c7", 3))).replay).toBe("sequence 3 was already presented");
  });

  it("revoke, forgetKey and resetSequence drop the key's sequences from memory and rows; the sequence passes again", async () => {
    const l = ledger("one-row-forget");
    for (const [nonce, fingerprint] of [["d1", K1], ["d2", K2], ["d3", K3]] as const) await l.claim(q(nonce, 7, fingerprint));
    await l.claim(q("d4", 8, K1));
    await l.forgetKey(K1);
    expect(await heldAndStored(l)).toEqual({ held: [`${keyTag(K2)}:7`, `${keyTag(K3)}:7`].sort(), stored: [`${keyTag(K2)}:7`, `${keyTag(K3)}:7`].sort() });
    expect(await claimed(l, q("d5", 7))).toMatchObject({ consumed: true, rows: 1 });
    expect(await l.resetSequence(K2, null)).toEqual({ previous_highest: 7 });
    expect(await claimed(l, q("d6", 7, K2))).toMatchObject({ consumed: true, rows: 1 });
    await l.revoke(K3, "k3", 1);
    const { held, stored } = await heldAndStored(l);
    expect(held).toEqual(stored);
    expect(stored).toEqual([`${keyTag(K1)}:7`, `${keyTag(K2)}:7`].sort());
    expect((await l.claim(q("d7", 7, K1))).replay).toBe("sequence 7 was already presented");
  });
});

describe("IssuerLedger: the accepting path reads nothing, and a nonce already there is still judged in full", () => {
  it("a nonce replay memory cannot see (no sequence, or a fresh one) is refused and writes nothing; a retry of it gets its answer", async () => {
    const l = ledger("one-row-optimistic");
    const retry = { retryTag: "r".repeat(32), answer: '{"decision":"accept"}' };
    expect(await claimed(l, { ...q("b1", null), ...retry })).toMatchObject({ consumed: true, rows: 1 });
    // Same nonce, no sequence: memory admits it, the insert finds the row, the full judgement answers.
    expect(await claimed(l, q("b1", null))).toMatchObject({ consumed: false, replay: `nonce ${"b1".padStart(32, "0")} was already presented`, rows: 0 });
    expect(await claimed(l, q("b1", 77))).toMatchObject({ consumed: false, replay: `nonce ${"b1".padStart(32, "0")} was already presented`, rows: 0 });
    const again = await l.claim({ ...q("b1", null), ...retry });
    expect(again).toMatchObject({ consumed: true, retried: true, answer: '{"decision":"accept"}' });
    // The refused fresh sequence was not noted: it is free for a new nonce.
    expect(await claimed(l, q("b2", 77))).toMatchObject({ consumed: true, rows: 1 });
    expect(await heldAndStored(l)).toEqual({ held: [`${keyTag(K1)}:77`], stored: [`${keyTag(K1)}:77`] });
  });
});

describe("IssuerLedger: the strict window without a row per claim", () => {
  it("a key's first window claim writes 2 rows (nonce, window), every later one 1; a refused one 0", async () => {
    const l = ledger("one-row-window");
    expect(await claimed(l, q("e1", 5000, K1, "window"))).toMatchObject({ consumed: true, rows: 2 });
    for (const [nonce, sequence] of [["e2", 5001], ["e3", 4990], ["e4", 6000], ["e5", 4977]] as const) {
      expect(await claimed(l, q(nonce, sequence, K1, "window"))).toMatchObject({ consumed: true, rows: 1 });
    }
    expect(await claimed(l, q("e6", 6000, K1, "window"))).toMatchObject({ replay: "sequence 6000 was already presented", rows: 0 });
    expect(await claimed(l, q("e7", 4976, K1, "window"))).toMatchObject({ replay: expect.stringMatching(/older than the window/), rows: 0 });
    expect(await claimed(l, q("e8", 7, K2, "window"))).toMatchObject({ consumed: true, rows: 2 });
    expect((await l.stats()).windows).toEqual([{ fingerprint: K1, highest: 6000 }, { fingerprint: K2, highest: 7 }]);
  });

  it("a window rebuilt after a restart equals the one before: what was refused stays refused", async () => {
    let l = ledger("one-row-window-restart");
    for (const [i, sequence] of [5000, 4000, 4990, 5100, 4100, 6000].entries()) await l.claim(q(`f${i}`, sequence, K1, "window"));
    const { now, rebuilt } = await windowNowAndRebuilt(l, K1);
    expect(rebuilt).toEqual(now);
    expect(now.highest).toBe(6000);
    l = await restarted("one-row-window-restart");
    expect((await l.stats()).windows).toEqual([{ fingerprint: K1, highest: 6000 }]);
    expect((await l.claim(q("g1", 5100, K1, "window"))).replay).toBe("sequence 5100 was already presented");
    expect((await l.claim(q("g2", 4976, K1, "window"))).replay).toMatch(/older than the window/);
    expect(await claimed(l, q("g3", 4977, K1, "window"))).toMatchObject({ consumed: true, rows: 1 });
  });

  it("purge, then restart: a sequence whose nonce row was purged but is still inside the window is refused", async () => {
    let l = ledger("one-row-window-purge");
    const past = Date.now() / 1000 + 0.3;
    for (const [nonce, sequence, retainUntil] of [["h1", 100, past], ["h2", 101, past], ["h3", 102, 2e9], ["h4", 600, past]] as const) await l.claim(q(nonce, sequence, K1, "window", retainUntil));
    await pastRetention(past);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    expect((await l.stats()).nonces).toBe(1);
    const { now, rebuilt } = await windowNowAndRebuilt(l, K1);
    expect(rebuilt).toEqual(now);
    l = await restarted("one-row-window-purge");
    for (const sequence of [100, 101, 600]) expect(await claimed(l, q(`i${sequence}`, sequence, K1, "window"))).toMatchObject({ replay: `sequence ${sequence} was already presented`, rows: 0 });
    expect(await claimed(l, q("i1", 300, K1, "window"))).toMatchObject({ consumed: true, rows: 1 });
    const soon = Date.now() / 1000 + 0.3;
    expect(await claimed(l, q("i2", 1200, K1, "window", soon))).toMatchObject({ consumed: true, rows: 1 });
    // Once more, the window now ahead of its row again: purge, restart, and the old ones are too old.
    await pastRetention(soon);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    l = await restarted("one-row-window-purge");
    for (const sequence of [300, 600, 1200]) expect((await l.claim(q(`j${sequence}`, sequence, K1, "window"))).replay).toBe(`sequence ${sequence} was already presented`);
    expect((await l.claim(q("j1", 176, K1, "window"))).replay).toMatch(/older than the window/);
    expect((await l.claim(q("j2", 177, K1, "window"))).consumed).toBe(true);
  });

  it("a key's claims under policy repeat stay out of its window, across a restart", async () => {
    let l = ledger("one-row-window-switch");
    await l.claim(q("k1", 100, K1, "window"));
    await l.claim(q("k2", 5000, K1, "repeat"));
    await l.claim(q("k3", 200, K1, "window"));
    const { now, rebuilt } = await windowNowAndRebuilt(l, K1);
    expect(rebuilt).toEqual(now);
    expect(now.highest).toBe(200);
    l = await restarted("one-row-window-switch");
    expect((await l.claim(q("k4", 150, K1, "window"))).consumed).toBe(true);
    expect((await l.claim(q("k5", 5000, K1, "window"))).replay).toBe("sequence 5000 was already presented");
  });

  it("forgetKey and resetSequence drop a window that was never purged; the key starts afresh after a restart", async () => {
    let l = ledger("one-row-window-forget");
    await l.claim(q("m1", 9000, K1, "window"));
    await l.claim(q("m2", 9500, K1, "window"));
    expect(await l.resetSequence(K1, null)).toEqual({ previous_highest: 9500 });
    l = await restarted("one-row-window-forget");
    expect((await l.stats()).windows).toEqual([]);
    expect(await claimed(l, q("m3", 5, K1, "window"))).toMatchObject({ consumed: true, rows: 2 });
    await l.forgetKey(K1);
    expect(await claimed(l, q("m4", 5, K1, "window"))).toMatchObject({ consumed: true, rows: 2 });
  });
});

describe("IssuerLedger: a ledger created with the unique index", () => {
  it("loses the index when constructed and keeps its state", async () => {
    let l = ledger("one-row-old-schema");
    await runInDurableObject(l, (_o: IssuerLedger, state) => {
      const sql = state.storage.sql;
      sql.exec(`
        DROP TABLE nonces;
        CREATE TABLE nonces (nonce TEXT PRIMARY KEY, retain_until REAL NOT NULL, key_tag INTEGER, sequence INTEGER, retry_tag TEXT, answer TEXT) WITHOUT ROWID;
        CREATE UNIQUE INDEX nonce_sequences ON nonces (key_tag, sequence) WHERE sequence IS NOT NULL;
      `);
      sql.exec("INSERT INTO nonces (nonce, retain_until, key_tag, sequence) VALUES (?, 2e9, ?, 7), (?, 2e9, ?, 50)", "n1".padStart(32, "0"), keyTag(K1), "n2".padStart(32, "0"), keyTag(K2));
      sql.exec("INSERT INTO windows (fingerprint, highest, bitmap) VALUES (?, 50, '1')", K2);
    });
    l = await restarted("one-row-old-schema");
    expect(await claimed(l, q("n3", 7))).toMatchObject({ replay: "sequence 7 was already presented", rows: 0 });
    expect(await claimed(l, q("n4", 8))).toMatchObject({ consumed: true, rows: 1 });
    expect(await claimed(l, q("n5", 50, K2, "window"))).toMatchObject({ replay: "sequence 50 was already presented", rows: 0 });
    expect(await claimed(l, q("n6", 51, K2, "window"))).toMatchObject({ consumed: true, rows: 1 });
    expect((await l.claim(q("n7", 1200, K2, "window"))).consumed).toBe(true);
    expect((await l.claim(q("n8", 52, K2, "window"))).replay).toMatch(/older than the window/);
    const schema = await runInDurableObject(l, (_o: IssuerLedger, state) => ({
      // The nonce table's own indexes (the audited resets' time index is on its own table).
      indexes: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'nonces' AND sql IS NOT NULL").toArray(),
      columns: state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('nonces')").toArray().map((c) => c.name),
    }));
    expect(schema).toEqual({ indexes: [], columns: ["nonce", "retain_until", "key_tag", "sequence", "retry_tag", "answer", "windowed", "withdrawn"] });
  });
});
