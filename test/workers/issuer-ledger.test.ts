import { env } from "cloudflare:workers";
import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { IssuerLedger } from "../../durable-objects/issuer-ledger.js";

const ledger = (name: string) => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(name));
const q = (nonce: string, sequence: number, retainUntil: number, kid: string | null = "k1") => ({
  issuer: "https://ledger.example", nonce: nonce.padStart(32, "0"), sequence, kid, retainUntil, warnings: [],
});

describe("IssuerLedger", () => {
  it("claims a nonce once; a second claim is a replay and changes nothing", async () => {
    const l = ledger("ledger-claim");
    expect(await l.claim(q("a", 1, 2e9))).toEqual({ revoked: false, replay: null, consumed: true });
    const again = await l.claim(q("a", 2, 2e9));
    expect(again.consumed).toBe(false);
    expect(again.replay).toMatch(/already presented/);
    expect((await l.stats()).window.highest).toBe(1);
  });

  it("says which sequence rule was broken", async () => {
    const l = ledger("ledger-seq");
    await l.claim(q("b1", 5000, 2e9));
    expect((await l.claim(q("b2", 5000, 2e9))).replay).toBe("sequence 5000 was already presented");
    expect((await l.claim(q("b3", 3976, 2e9))).replay).toMatch(/older than the window/);
    expect((await l.claim(q("b4", 3977, 2e9))).consumed).toBe(true);
  });

  it("refuses a revoked kid atomically: the nonce stays unclaimed", async () => {
    const l = ledger("ledger-revoked");
    await l.revoke("k1", 100);
    expect(await l.claim(q("c", 1, 2e9))).toEqual({ revoked: true, replay: null, consumed: false });
    expect((await l.stats()).nonces).toBe(0);
    expect((await l.claim(q("c", 1, 2e9, "k2"))).consumed).toBe(true);
  });

  it("purges nonces whose retention passed when its alarm runs, keeping the rest", async () => {
    const l = ledger("ledger-purge");
    const now = Date.now() / 1000;
    await l.claim(q("d1", 1, now - 1));
    await l.claim(q("d2", 2, now + 3600));
    expect((await l.stats()).nonces).toBe(2);
    expect(await runDurableObjectAlarm(l)).toBe(true);
    expect((await l.stats()).nonces).toBe(1);
    expect((await l.claim(q("d2", 3, now + 3600))).replay).toMatch(/already presented/);
    const next = await runInDurableObject(l, (_o: IssuerLedger, state) => state.storage.getAlarm());
    expect(next).toBeGreaterThan(Date.now());
  });

  it("keeps its state across a restart of the object", async () => {
    const id = env.ISSUER_LEDGER.idFromName("ledger-restart");
    await env.ISSUER_LEDGER.get(id).claim(q("e", 7, 2e9));
    await env.ISSUER_LEDGER.get(id).revoke("k9", 1);
    await abortAllDurableObjects();
    const after = env.ISSUER_LEDGER.get(id);
    expect((await after.claim(q("e", 8, 2e9))).replay).toMatch(/already presented/);
    expect((await after.stats()).revoked.map((r) => r.kid)).toEqual(["k9"]);
    expect((await after.claim(q("f", 7, 2e9))).replay).toBe("sequence 7 was already presented");
  });
});
