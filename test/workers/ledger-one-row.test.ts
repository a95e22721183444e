/**
 * One row written per accepted IssuerLedger claim: the default policy's sequences are held in
 * memory instead of a unique index. Restarts are real (abortAllDurableObjects) or a fresh
 * instance over the same storage.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { IssuerLedger } from "../../durable-objects/issuer-ledger.js";
import { keyTag, type ClaimQuery, type SequencePolicy } from "../../worker/protocol/ledger.js";
import { databaseRows } from "../support/ledger-rows.js";

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
    const past = Date.now() / 1000 - 1;
    await l.claim(q("c1", 1, K1, "repeat", past));
    await l.claim(q("c2", 2, K1, "repeat", past));
    await l.claim(q("c3", 3));
    await l.claim(q("c4", 1, K2, "repeat", past));
    expect((await l.claim(q("c5", 1))).replay).toBe("sequence 1 was already presented");
    expect(await heldAndStored(l)).toMatchObject({ stored: [`${keyTag(K1)}:1`, `${keyTag(K1)}:2`, `${keyTag(K1)}:3`, `${keyTag(K2)}:1`].sort() });
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
