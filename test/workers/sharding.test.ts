import { env } from "cloudflare:workers";
import { createExecutionContext, listDurableObjectIds, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerName, ledgerNames } from "../../worker/protocol/ledger.js";
import { harness, issuerFor } from "../support/app-harness.js";

const codes = (r: { body: { failures: { code: string }[] } }) => r.body.failures.map((f) => f.code);

describe("a sharded issuer (ledger_shards: 4)", () => {
  it("spreads nonces over its shards and still accepts each receipt exactly once under concurrency", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("sharded-concurrency");
    expect((await h.pin({ ...issuer.anchor, ledger_shards: 4 })).status).toBe(200);
    const bodies = await Promise.all(Array.from({ length: 12 }, () => issuer.body()));
    const shardKey = new TextEncoder().encode(env.LEDGER_SHARD_KEY);
    const shardsUsed = new Set(bodies.map((b) => ledgerName(issuer.id.issuer, b.receipt.nonce, 4, shardKey)));
    expect(shardsUsed.size).toBeGreaterThan(1);
    const answers = await Promise.all(bodies.flatMap((b) => Array.from({ length: 5 }, () => h.verify(b))));
    expect(answers.filter((a) => a.body.valid)).toHaveLength(12);
    expect(answers.filter((a) => codes(a).join() === "REPLAY_DETECTED")).toHaveLength(48);
  });

  it("revokes a key in every shard at once", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("sharded-revoke");
    await h.pin({ ...issuer.anchor, ledger_shards: 4 });
    expect((await h.revoke(issuer.id.issuer, issuer.id.kid)).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 16 }, async () => h.verify(await issuer.body())));
    expect(answers.every((a) => codes(a).join() === "ANCHOR_REVOKED")).toBe(true);
    const shown = await h.call(`/v1/issuers/${encodeURIComponent(issuer.id.issuer)}`);
    expect(shown.body).toMatchObject({ ledger_shards: 4, revoked: [{ kid: issuer.id.kid, fingerprint: shown.body.keys[0].fingerprint }] });
  });

  it("refuses to pin an issuer named like one of another issuer's shards (a # in the issuer): it would share that shard's ledger", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("sharded-namesake");
    expect((await h.pin({ ...issuer.anchor, ledger_shards: 2 })).status).toBe(200);
    for (const k of [0, 1]) {
      const namesake = await issuerFor(`sharded-namesake-${k}`);
      // Unsharded, its ledger would be named by the issuer alone: one of the sharded issuer's.
      expect(ledgerNames(issuer.id.issuer, 2)).toContain(ledgerName(`${issuer.id.issuer}#${k}`, "0".repeat(32), 1, new Uint8Array()));
      const res = await h.pin({ ...namesake.anchor, issuer: `${issuer.id.issuer}#${k}` });
      expect([res.status, res.body.error?.code]).toEqual([400, "ANCHOR_INVALID"]);
    }
  });

  it("refuses to change an issuer's shard count with 409 ANCHOR_SHARDS_IMMUTABLE", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("sharded-immutable");
    await h.pin({ ...issuer.anchor, ledger_shards: 4 });
    const res = await h.pin({ ...issuer.anchor, ledger_shards: 8 });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("ANCHOR_SHARDS_IMMUTABLE");
    expect((await h.pin({ ...issuer.anchor, ledger_shards: 4 })).status).toBe(200);
  });
});

describe("unpinned issuers get no ledger", () => {
  it("a receipt from an unpinned issuer creates no Durable Object, in enforce or audit mode", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx);
    const stranger = await issuerFor("never-pinned");
    const before = (await listDurableObjectIds(env.ISSUER_LEDGER)).length;
    for (const mode of ["enforce", "audit"]) {
      const res = await h.verify({ ...(await stranger.body()), mode });
      expect(codes(res)).toEqual(["UNTRUSTED_ISSUER"]);
    }
    await waitOnExecutionContext(ctx);
    const ids = await listDurableObjectIds(env.ISSUER_LEDGER);
    expect(ids.length).toBe(before);
    expect(ids.some((id) => id.equals(env.ISSUER_LEDGER.idFromName(stranger.id.issuer)))).toBe(false);
  });
});
