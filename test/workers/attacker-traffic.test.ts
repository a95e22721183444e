/**
 * Attacker traffic buys nothing: refused calls write nothing on an issuer's ledger, no cache
 * holds strings an unauthenticated caller chose, counts are labelled only by pinned issuers,
 * the shard choice needs the deployment's key, and bad issuer names are 400s, never 5xx.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env.js";
import { uriMemoSize } from "../../worker/protocol/receipt.js";
import { anchorFor, identity, makeReceipt } from "../../vectors/ccs/factory.js";
import { ADMIN_TOKEN, AUDIENCE, harness, issuerFor, SECOND_AUDIENCE, TEST_NOW } from "../support/app-harness.js";
import { databaseRows } from "../support/ledger-rows.js";
import { Stats } from "../../worker/contract/schemas.js";

const codes = (r: { body: { failures: { code: string }[] } }) => r.body.failures.map((f) => f.code);
const ledgerOf = (issuer: string) => env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(issuer));

describe("refused calls write nothing on the issuer's ledger", () => {
  it("a forged signature, a replay, a revoked key, a wrong audience, an expired receipt leave its database unchanged; an accept writes one row", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    const issuer = await issuerFor("refusals-write-nothing");
    const revokedKey = await identity("refusals-write-nothing/k2", issuer.id.issuer, "k2");
    await h.pin(anchorFor(issuer.id, revokedKey));
    expect((await h.revoke(issuer.id.issuer, "k2")).status).toBe(200);
    const replayed = await issuer.body();
    expect((await h.verify(replayed)).body.valid).toBe(true);
    await waitOnExecutionContext(ctx);
    const before = await databaseRows(ledgerOf(issuer.id.issuer));

    const genuine = await issuer.body();
    const forged = { ...genuine, receipt: { ...genuine.receipt, signature: genuine.receipt.signature.replace(/^./, (c: string) => (c === "0" ? "1" : "0")) } };
    const { receipt: byRevoked, request } = await makeReceipt(revokedKey, { label: "refusals/revoked", audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: 1 });
    const expired = harness(env, ctx, { now: () => TEST_NOW + 3600, decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    const refusals: [string, Promise<{ body: any }>][] = [
      ["SIGNATURE_INVALID", h.verify(forged)],
      ["REPLAY_DETECTED", h.verify(replayed)],
      ["ANCHOR_REVOKED", h.verify({ receipt: byRevoked, audience: AUDIENCE, request })],
      ["AUDIENCE_MISMATCH", h.verify({ ...genuine, audience: SECOND_AUDIENCE })],
      ["FRESHNESS_EXPIRED", expired.verify(genuine)],
    ];
    for (const [code, answer] of refusals) expect(codes(await answer)).toEqual([code]);
    await waitOnExecutionContext(ctx);
    expect(await databaseRows(ledgerOf(issuer.id.issuer))).toEqual(before);

    expect((await h.verify(genuine)).body.valid).toBe(true);
    const after = await databaseRows(ledgerOf(issuer.id.issuer));
    expect(after.nonces).toHaveLength(before.nonces.length + 1);
    expect({ ...after, nonces: before.nonces }).toEqual(before);
  });

  it("the refusals are counted all the same, batched into DecisionStats under the pinned issuer", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    const issuer = await issuerFor("refusals-counted");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    await h.verify(body);
    await h.verify(body);
    await h.verify({ ...(await issuer.body()), audience: SECOND_AUDIENCE });
    await waitOnExecutionContext(ctx);
    const stats = await h.admin("GET", "/v1/admin/stats?minutes=5");
    expect(stats.body.totals[issuer.id.issuer]).toEqual({ ACCEPTED: 1, REPLAY_DETECTED: 1, AUDIENCE_MISMATCH: 1 });
    expect(stats.body.per_minute.length).toBeGreaterThan(0);
    // The answer is the DecisionStats of /openapi.json, member for member.
    expect(Stats.strict().safeParse(stats.body).error).toBeUndefined();
    expect((await h.call("/v1/admin/stats")).status).toBe(401);
    expect((await h.admin("GET", "/v1/admin/stats?minutes=zero")).status).toBe(400);
    for (const odd of ["0x10", "1e3", "%205", "5.0", "-5", "0"]) expect((await h.admin("GET", `/v1/admin/stats?minutes=${odd}`)).status).toBe(400);
    // One parameter, once: the router would answer the first of a repeat, and an unknown one would be ignored.
    for (const odd of ["minutes=1&minutes=2", "minute=5", "minutes=5&x=1", "minutes=%ff", "=5", "minutes=5&=1"]) {
      const res = await h.admin("GET", `/v1/admin/stats?${odd}`);
      expect({ odd, status: res.status, code: res.body?.error?.code }).toEqual({ odd, status: 400, code: "MALFORMED_REQUEST" });
    }
  });
});

describe("no cache holds attacker-chosen strings", () => {
  it("400 calls with distinct long issuers are MALFORMED_RECEIPT and grow no cache nor any count label", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx);
    const issuer = await issuerFor("long-issuers");
    await h.pin(issuer.anchor);
    expect((await h.verify(await issuer.body())).body.valid).toBe(true);
    const template = await issuer.body();
    // One malformed call first: "unpinned" is the one label every such call shares.
    expect((await h.verify({ ...template, receipt: { ...template.receipt, issuer: "not a uri" } })).status).toBe(400);
    const isolate = async () => (await h.admin("GET", "/v1/admin/stats")).body.isolate;
    const before = { ...(await isolate()), memo: uriMemoSize() };
    expect(before).toMatchObject({ anchor_cache: 1, decision_labels: 2 });
    for (let i = 0; i < 400; i++) {
      const long = `https://${"a".repeat(4000)}${i}.example`;
      const res = await h.verify({ ...template, receipt: { ...template.receipt, issuer: long } });
      expect(res.status).toBe(400);
      expect(codes(res)).toEqual(["MALFORMED_RECEIPT"]);
    }
    await waitOnExecutionContext(ctx);
    expect({ ...(await isolate()), memo: uriMemoSize() }).toEqual(before);
  });

  it("distinct short unpinned issuers count as 'unpinned', and the URI memo stays bounded", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    const template = await (await issuerFor("short-issuers")).body();
    for (let i = 0; i < 400; i++) {
      const res = await h.verify({ ...template, receipt: { ...template.receipt, issuer: `https://stranger-${i}.example` } });
      expect(codes(res)).toEqual(["UNTRUSTED_ISSUER"]);
    }
    await waitOnExecutionContext(ctx);
    expect(uriMemoSize()).toBeLessThanOrEqual(256);
    const stats = await h.admin("GET", "/v1/admin/stats");
    expect(stats.body.isolate.anchor_cache).toBe(0);
    expect(stats.body.isolate.decision_labels).toBe(0);
    expect(Object.keys(stats.body.totals).filter((l) => l.startsWith("https://stranger-"))).toEqual([]);
    expect(stats.body.totals.unpinned.UNTRUSTED_ISSUER).toBeGreaterThanOrEqual(400);
  });
});

describe("issuer names the service cannot hold are 400, never 5xx", () => {
  const long = `https://${"x".repeat(600)}.example`;

  it("GET /v1/issuers with an undecodable or overlong issuer is 400 MALFORMED_REQUEST", async () => {
    const h = harness(env, createExecutionContext());
    for (const path of ["/v1/issuers/%E0%A4%A", `/v1/issuers/${encodeURIComponent(long)}`]) {
      const res = await h.call(path);
      expect([res.status, res.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    }
  });

  it("admin calls naming an overlong issuer are 400", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("overlong-admin");
    const calls: [string, string, unknown][] = [
      ["POST", "/v1/admin/anchors/revoke", { issuer: long, kid: "k1" }],
      ["POST", "/v1/admin/anchors/reset-sequence", { issuer: long, kid: "k1", reason: "x" }],
      ["PUT", "/v1/admin/anchors", { ...issuer.anchor, issuer: long }],
      ["PUT", "/v1/admin/anchors", { ...issuer.anchor, issuer: `https://${"é".repeat(200)}.example` }],
    ];
    for (const [method, path, body] of calls) {
      const res = await h.admin(method, path, body);
      expect(res.status, path).toBe(400);
      expect(["MALFORMED_REQUEST", "ANCHOR_INVALID"]).toContain(res.body.error.code);
    }
  });
});

describe("the shard choice is keyed", () => {
  it("without LEDGER_SHARD_KEY, a sharded issuer is refused with 500 SERVICE_MISCONFIGURED, never sharded unkeyed; one shard needs no key", async () => {
    const keyed = harness(env, createExecutionContext());
    const sharded = await issuerFor("unkeyed-sharded");
    await keyed.pin({ ...sharded.anchor, ledger_shards: 4 });
    const { LEDGER_SHARD_KEY: _key, ...rest } = env;
    const unkeyed = harness({ ...rest, LEDGER_SHARD_KEY: "too-short" } as Env, createExecutionContext());
    const verify = await unkeyed.verify(await sharded.body());
    expect(verify.status).toBe(500);
    expect(verify.body).toMatchObject({ valid: false, decision: "reject", error: { code: "SERVICE_MISCONFIGURED" } });
    const pin = await unkeyed.pin({ ...(await issuerFor("unkeyed-pin")).anchor, ledger_shards: 2 });
    expect([pin.status, pin.body.error.code]).toEqual([500, "SERVICE_MISCONFIGURED"]);
    const single = await issuerFor("unkeyed-single");
    expect((await unkeyed.pin(single.anchor)).status).toBe(200);
    expect((await unkeyed.verify(await single.body())).body.valid).toBe(true);
  });
});

describe("admin stats", () => {
  it("needs the admin token", async () => {
    const res = await harness(env, createExecutionContext()).call("/v1/admin/stats", { headers: { authorization: `Bearer ${ADMIN_TOKEN}x` } });
    expect(res.status).toBe(401);
  });
});
