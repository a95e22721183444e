/**
 * CCS conformance beyond the receipt format, in workerd with real KV and Durable Objects: verifier
 * classes on anchors and decisions (§9), a relying party's class floor, the 13.7 allow-only
 * review flag from the decision counters, and Level 0 receipts (§10) refused wherever evidence
 * crosses a trust domain.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { labelHex } from "../../vectors/ccs/factory.js";
import { buildChain, receiptDigest, receiptHashOf } from "../../worker/protocol/chain.js";
import { delegationContext } from "../../worker/protocol/issue.js";
import { jcs, sha256Hex } from "../../worker/protocol/digest.js";
import { legacyMac, level0Payload } from "../../worker/protocol/conformance/level0.js";
import { legacyPayload } from "../../worker/protocol/issuing/legacy-hmac.js";
import { fromHex } from "../../worker/protocol/encoding.js";
import type { Receipt } from "../../worker/protocol/receipt.js";
import type { Env } from "../../worker/env.js";
import { AUDIENCE, harness, issuerFor, SECOND_AUDIENCE, TEST_NOW } from "../support/app-harness.js";

const JSON_HEADERS = { "content-type": "application/json" };
const codes = (body: { failures: { code: string }[] }) => body.failures.map((f) => f.code);
const AUDIT = { report: "https://audits.example/report-2026-03", date: "2026-03-31" };

async function envelopeOf(r: Receipt) {
  return {
    envelope_version: "1.3",
    original_receipt: r,
    parent_trace_id: r.trace_id,
    child_trace_id: await labelHex(`conformance/child/${r.nonce}`, 16),
    delegation_reason: "delegates the lookup",
    hop_count: 1,
    previous_receipt_hash: receiptHashOf(await receiptDigest(r as unknown as Record<string, unknown>)),
  };
}

/** A 7-field Level 0 receipt under the workers-pool LEGACY_HMAC_KEY, and the Command it binds. */
async function level0Receipt(label: string, verdict: "allow" | "deny" = "allow") {
  const params = { query: "weather in Tokyo" };
  const request = { agent_id: "test-agent", tool: "search_web", params, timestamp: TEST_NOW - 2, trace_id: await labelHex(`${label}/trace`, 16) };
  const fields = { trace_id: request.trace_id, verdict, timestamp: TEST_NOW - 1.25, tool: "search_web", params_hash: (await sha256Hex(jcs(params))).slice(0, 16), rule_summary: `SEC-004=${verdict}` };
  const receipt = { ...fields, receipt: legacyMac(level0Payload(fields), fromHex(env.LEGACY_HMAC_KEY)!), ...(verdict === "deny" ? { block_reason: "denied" } : {}) };
  return { receipt, request };
}

describe("verifier classes (CCS §9)", () => {
  it("an anchor declares A, B (naming its audit) or C; C when it declares nothing; B without an audit, or an audit without B, is refused", async () => {
    const h = harness(env, createExecutionContext());
    const b = await issuerFor("class-b-anchor");
    expect((await h.pin({ ...b.anchor, verifier_class: "B" })).body.error.code).toBe("ANCHOR_INVALID");
    expect((await h.pin({ ...b.anchor, verifier_class: "A", audit: AUDIT })).body.error.code).toBe("ANCHOR_INVALID");
    expect((await h.pin({ ...b.anchor, verifier_class: "D" })).body.error.code).toBe("ANCHOR_INVALID");
    // Review rv-118: the date's form was all that was checked, so a day that does not exist, or an
    // audit not yet made, was pinned as the audit a Class B anchor names.
    for (const date of ["2026-02-31", "2025-02-29", "2026-04-31", "2030-06-01"]) {
      const refused = await h.pin({ ...b.anchor, verifier_class: "B", audit: { ...AUDIT, date } });
      expect([refused.status, refused.body.error.code], date).toEqual([400, "ANCHOR_INVALID"]);
    }
    expect((await h.pin({ ...b.anchor, verifier_class: "B", audit: { ...AUDIT, date: "2028-02-29" } })).status).toBe(200);
    expect((await h.pin({ ...b.anchor, verifier_class: "B", audit: AUDIT })).status).toBe(200);
    const view = await h.call(`/v1/issuers/${encodeURIComponent(b.id.issuer)}`);
    expect(view.body).toMatchObject({ verifier_class: "B", audit: AUDIT, level0: false });
    const c = await issuerFor("class-default-anchor");
    await h.pin(c.anchor);
    expect((await h.call(`/v1/issuers/${encodeURIComponent(c.id.issuer)}`)).body).toMatchObject({ verifier_class: "C", audit: null });
  });

  it("decisions and envelopes report the issuer's class; an unpinned issuer's is null", async () => {
    const h = harness(env, createExecutionContext());
    const a = await issuerFor("class-a-decisions");
    await h.pin({ ...a.anchor, verifier_class: "A" });
    expect((await h.verify(await a.body())).body).toMatchObject({ valid: true, decision: "accept", verifier_class: "A", level: 1 });
    const { receipt } = await a.receipt();
    const env1 = await h.call("/v1/envelopes/verify", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ envelope: await envelopeOf(receipt), audience: AUDIENCE }) });
    expect(env1.body).toMatchObject({ valid: true, decision: "accept", verifier_class: "A" });
    const stranger = await issuerFor("class-unpinned");
    expect((await h.verify(await stranger.body())).body).toMatchObject({ valid: false, verifier_class: null });
  });

  it("a relying party registered with min_verifier_class refuses a lower class with VERIFIER_CLASS_INSUFFICIENT before the nonce is consumed; the same receipt passes for a party without the floor", async () => {
    const h = harness(env, createExecutionContext());
    const b = await issuerFor("class-floor-b");
    await h.pin({ ...b.anchor, verifier_class: "B", audit: AUDIT });
    const token = "class-floor-party-token-0123456789abcdef";
    const bad = await h.admin("POST", "/v1/admin/relying-parties", { name: "floor-bad", audiences: [AUDIENCE], min_verifier_class: { "https://not-mine.example": "A" } });
    expect(bad.status).toBe(400);
    // A prototype key names no audience: refused, not dropped into a registration with no floor at all.
    const proto = await h.admin("POST", "/v1/admin/relying-parties", { name: "floor-proto", audiences: [AUDIENCE], min_verifier_class: JSON.parse('{"__proto__":"A"}') });
    expect([proto.status, proto.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    const registered = await h.admin("POST", "/v1/admin/relying-parties", { name: "floor-a", audiences: [AUDIENCE], token, min_verifier_class: "A" });
    expect(registered.status).toBe(201);
    expect(registered.body.min_verifier_class).toEqual({ [AUDIENCE]: "A" });
    const body = await b.body();
    const asFloor = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
    const refused = await h.call("/v1/receipts/verify", { method: "POST", headers: asFloor, body: JSON.stringify(body) });
    expect(refused.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false, verifier_class: "B" });
    expect(codes(refused.body)).toEqual(["VERIFIER_CLASS_INSUFFICIENT"]);
    const { receipt } = await b.receipt();
    const envelope = await h.call("/v1/envelopes/verify", { method: "POST", headers: asFloor, body: JSON.stringify({ envelope: await envelopeOf(receipt), audience: AUDIENCE }) });
    expect(codes(envelope.body)).toEqual(["VERIFIER_CLASS_INSUFFICIENT"]);
    expect(envelope.body.nonce_consumed).toBe(false);
    // A live chain's hop holds the floor too: refused, nothing consumed, no chain created.
    const hop = await h.call("/v1/chains/class-floor-live/hops", { method: "POST", headers: asFloor, body: JSON.stringify({ entry: { hop_count: 0, receipt } }) });
    expect([hop.status, hop.body.error.code, hop.body.nonce_consumed]).toEqual([422, "VERIFIER_CLASS_INSUFFICIENT", false]);
    expect((await h.call("/v1/chains/class-floor-live", { headers: asFloor })).status).toBe(404);
    // The honest path: the same receipt, never consumed, is accepted by a party without the floor.
    expect((await h.verify(body)).body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });

  it("POST /v1/chains/verify holds the caller's floor at every hop it verifies (the strictest of its floors for the kept receipts' audiences); a party without one, or with one only for another audience, is not refused", async () => {
    const h = harness(env, createExecutionContext());
    const a = await issuerFor("chain-floor-a");
    const b = await issuerFor("chain-floor-b");
    await h.pin({ ...a.anchor, verifier_class: "A" });
    await h.pin({ ...b.anchor, verifier_class: "B", audit: AUDIT });
    /** Hop 0 by `first`, hop 1 by `second` signing its link to hop 0, each addressed to its audience. */
    const chainOf = async (id: string, first: typeof a, second: typeof a, audiences: [string, string]) => {
      const hop0 = (await first.receipt({ audience: audiences[0] })).receipt;
      const delegation = { previous_receipt_hash: receiptHashOf(await receiptDigest(hop0 as unknown as Record<string, unknown>)), parent_trace_id: hop0.trace_id, hop_count: 1 };
      const hop1 = (await second.receipt({ audience: audiences[1], runtimeContext: { delegation } })).receipt;
      return buildChain(id, [{ receipt: hop0 }, { receipt: hop1, runtime_context: { delegation } }]);
    };
    const party = async (name: string, audiences: string[], min_verifier_class: unknown) => {
      const token = `${name}-token-0123456789abcdef0123456789`;
      expect((await h.admin("POST", "/v1/admin/relying-parties", { name, audiences, token, min_verifier_class })).status).toBe(201);
      return token;
    };
    const verifyAs = async (token: string | null, call: Record<string, unknown>) =>
      (await h.call("/v1/chains/verify", { method: "POST", headers: { ...JSON_HEADERS, ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(call) })).body;
    const floorA = await party("chain-floor-all-a", [AUDIENCE], "A");
    const elsewhere = await party("chain-floor-second-a", [AUDIENCE, SECOND_AUDIENCE], { [SECOND_AUDIENCE]: "A" });

    const chain = await chainOf("class-floor-doc", a, b, [AUDIENCE, AUDIENCE]);
    const refused = await verifyAs(floorA, { chain });
    expect(refused).toMatchObject({ chain_valid: false, broken_at_hop: 1 });
    expect(refused.failures.map((f: { code: string; hop: number }) => [f.code, f.hop])).toEqual([["VERIFIER_CLASS_INSUFFICIENT", 1]]);
    // The same chain passes for a party without a floor, and for one whose floor names another audience.
    for (const token of [null, elsewhere]) expect(await verifyAs(token, { chain })).toMatchObject({ chain_valid: true, failures: [] });
    // Spot mode holds the floor at the spot hop alone.
    expect(codes(await verifyAs(floorA, { chain, spot: 0 }))).toEqual(["CHAIN_UNSEALED"]);
    const spot = await verifyAs(floorA, { chain, spot: 1 });
    expect(spot.spot_valid).toBe(false);
    expect(codes(spot)).toEqual(["CHAIN_UNSEALED", "VERIFIER_CLASS_INSUFFICIENT"]);
    // A hop addressed to the audience the floor names makes it hold at every verified hop: the
    // Class B hop 0, addressed to an audience without a floor, is refused too.
    const mixed = await chainOf("class-floor-mixed", b, a, [AUDIENCE, SECOND_AUDIENCE]);
    expect(await verifyAs(null, { chain: mixed })).toMatchObject({ chain_valid: true, failures: [] });
    const strictest = await verifyAs(elsewhere, { chain: mixed });
    expect(strictest).toMatchObject({ chain_valid: false, broken_at_hop: 0 });
    expect(strictest.failures.map((f: { code: string; hop: number }) => [f.code, f.hop])).toEqual([["VERIFIER_CLASS_INSUFFICIENT", 0]]);
  });
});

describe("13.7: an allow-only issuer is flagged for review from the decision counters", () => {
  /** A harness flagging after 3 allows and flushing every decision, and a Class A issuer pinned in it, with its view's path. */
  const reviewed = async (label: string, anchor: Record<string, unknown> = {}) => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { reviewThreshold: 3, decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    const x = await issuerFor(label);
    await h.pin({ ...x.anchor, verifier_class: "A", ...anchor });
    return { ctx, h, x, path: `/v1/issuers/${encodeURIComponent(x.id.issuer)}` };
  };

  it("after the threshold of allow verdicts and nothing else, decisions warn VERIFIER_REVIEW_REQUIRED and judge it as Class C; GET /v1/issuers and the status page flag it; one deny clears it", async () => {
    const { ctx, h, x, path } = await reviewed("review-allow-only");
    for (let i = 0; i < 2; i++) expect((await h.verify(await x.body())).body).toMatchObject({ decision: "accept", failures: [] });
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toEqual({ flagged: false, allows: 2, others: 0, threshold: 3 });
    expect((await h.verify(await x.body())).body.failures).toEqual([]);
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toMatchObject({ flagged: true, allows: 3 });
    const warned = (await h.verify(await x.body())).body;
    expect(warned).toMatchObject({ valid: true, decision: "accept", verifier_class: "C" });
    expect(codes(warned)).toEqual(["VERIFIER_REVIEW_REQUIRED"]);
    expect(warned.failures[0].severity).toBe("WARNING");
    await waitOnExecutionContext(ctx);
    const page = await h.call("/");
    expect(page.text).toContain("review required: allow-only");
    expect((await h.verify(await x.body({ verdict: "deny" }))).body).toMatchObject({ valid: true, decision: "reject" });
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toMatchObject({ flagged: false, others: 1 });
    expect((await h.verify(await x.body())).body).toMatchObject({ failures: [], verifier_class: "A" });
  });

  it("a fresh isolate knows the flag before its first decision: it warns and judges the issuer as Class C without having flushed, in audit mode too, and a class floor refuses it", async () => {
    // Review rv-118: an isolate learned the flag only from its own flushes, so after a restart (or in
    // any new isolate) a flagged issuer was answered with its declared class and no warning, an
    // isolate serving audit calls only never learned it, and a party's Class A floor accepted it.
    const { ctx, h, x, path } = await reviewed("review-fresh-isolate");
    for (let i = 0; i < 3; i++) expect((await h.verify(await x.body())).body.decision).toBe("accept");
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toMatchObject({ flagged: true, allows: 3 });
    // Another isolate's memory: a new app that has flushed nothing and flushes only every 10 s.
    const fresh = harness(env, createExecutionContext(), { reviewThreshold: 3, decisionFlush: { everyMs: 10_000, everyDecisions: 1_000 } });
    const audited = (await fresh.verify(await x.body({}, { mode: "audit" }))).body;
    expect(audited).toMatchObject({ valid: true, decision: "audit", verifier_class: "C" });
    expect(codes(audited)).toEqual(["VERIFIER_REVIEW_REQUIRED"]);
    const token = "review-fresh-floor-token-0123456789abcdef";
    expect((await fresh.admin("POST", "/v1/admin/relying-parties", { name: "review-fresh-floor", audiences: [AUDIENCE], token, min_verifier_class: "A" })).status).toBe(201);
    const floored = harness(env, createExecutionContext(), { reviewThreshold: 3, decisionFlush: { everyMs: 10_000, everyDecisions: 1_000 } });
    const body = await x.body();
    const refused = await floored.call("/v1/receipts/verify", { method: "POST", headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    expect(refused.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false, verifier_class: "C" });
    expect(codes(refused.body)).toEqual(["VERIFIER_CLASS_INSUFFICIENT", "VERIFIER_REVIEW_REQUIRED"]);
  });

  it("fails closed while the flags were never read: a floor the declared class meets is 503 VERIFIER_UNAVAILABLE (nothing consumed) on the decision and chain routes, a call without a floor is answered, and the next call reads again", async () => {
    // A fresh isolate whose first read of the flags failed judged every issuer by its declared class
    // for a whole flush interval: a flagged Class A issuer was accepted for a party with a Class A floor.
    const { ctx, h, x } = await reviewed("review-unread");
    for (let i = 0; i < 3; i++) expect((await h.verify(await x.body())).body.decision).toBe("accept");
    await waitOnExecutionContext(ctx);
    const token = "review-unread-floor-token-0123456789abcdef";
    expect((await h.admin("POST", "/v1/admin/relying-parties", { name: "review-unread-floor", audiences: [AUDIENCE], token, min_verifier_class: "A" })).status).toBe(201);
    // Another isolate, whose DecisionStats fails until `down` is cleared.
    let down = true;
    const stats = env.DECISION_STATS;
    const failing = {
      idFromName: (name: string) => stats.idFromName(name),
      get: (id: DurableObjectId) => ({
        flagged: (threshold: number) => (down ? Promise.reject(new Error("decision stats is down")) : stats.get(id).flagged(threshold)),
        add: () => Promise.reject(new Error("decision stats is down")),
        tally: () => Promise.reject(new Error("decision stats is down")),
      }),
    };
    const freshCtx = createExecutionContext();
    const fresh = harness({ ...env, DECISION_STATS: failing } as unknown as Env, freshCtx, { reviewThreshold: 3, decisionFlush: { everyMs: 10_000, everyDecisions: 1_000 } });
    const asFloor = { ...JSON_HEADERS, authorization: `Bearer ${token}` };
    const body = await x.body();
    const unavailable = await fresh.call("/v1/receipts/verify", { method: "POST", headers: asFloor, body: JSON.stringify(body) });
    expect([unavailable.status, unavailable.body.error?.code, unavailable.body.nonce_consumed]).toEqual([503, "VERIFIER_UNAVAILABLE", false]);
    const { receipt } = await x.receipt();
    const envelope = await fresh.call("/v1/envelopes/verify", { method: "POST", headers: asFloor, body: JSON.stringify({ envelope: await envelopeOf(receipt), audience: AUDIENCE }) });
    expect([envelope.status, envelope.body.error?.code, envelope.body.nonce_consumed]).toEqual([503, "VERIFIER_UNAVAILABLE", false]);
    const chain = await buildChain("review-unread-doc", [{ receipt }]);
    const verified = await fresh.call("/v1/chains/verify", { method: "POST", headers: asFloor, body: JSON.stringify({ chain }) });
    expect([verified.status, verified.body.error?.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    const hop = await fresh.call("/v1/chains/review-unread-live/hops", { method: "POST", headers: asFloor, body: JSON.stringify({ entry: { hop_count: 0, receipt } }) });
    expect([hop.status, hop.body.error?.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    // A party without a floor is answered, by the declared class (the flags are not known here).
    expect((await fresh.verify(await x.body({}, { mode: "audit" }))).body).toMatchObject({ valid: true, decision: "audit", verifier_class: "A" });
    await waitOnExecutionContext(freshCtx);
    // Once DecisionStats answers, the next call reads the flags: no flush interval is waited.
    down = false;
    const refused = await fresh.call("/v1/receipts/verify", { method: "POST", headers: asFloor, body: JSON.stringify(body) });
    expect(refused.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false, verifier_class: "C" });
    expect(codes(refused.body)).toEqual(["VERIFIER_CLASS_INSUFFICIENT", "VERIFIER_REVIEW_REQUIRED"]);
    // The receipt was never consumed: a party without a floor still takes it.
    expect((await fresh.verify(body)).body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true, verifier_class: "C" });
  });

  it("counts each receipt once: a relying party repeating one call with its Idempotency-Key, or one Level 0 receipt, cannot flag the issuer for every other party", async () => {
    const { ctx, h, x, path } = await reviewed("review-retries", { shared_secret: { secret: "LEGACY_HMAC_KEY" } });
    const body = await x.body();
    const retry = () => h.call("/v1/receipts/verify", { method: "POST", headers: { ...JSON_HEADERS, "idempotency-key": "retry-1" }, body: JSON.stringify(body) });
    expect((await retry()).body).toMatchObject({ decision: "accept", nonce_consumed: true });
    for (let i = 0; i < 4; i++) expect((await retry()).body).toMatchObject({ decision: "accept", idempotent_replay: true });
    const { receipt, request } = await level0Receipt("review-retries");
    for (let i = 0; i < 4; i++) {
      expect((await h.verify({ receipt, request, audience: AUDIENCE, level: 0, issuer: x.id.issuer })).body).toMatchObject({ decision: "accept", level: 0, nonce_consumed: false });
    }
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toEqual({ flagged: false, allows: 1, others: 0, threshold: 3 });
    expect((await h.verify(await x.body())).body).toMatchObject({ failures: [], verifier_class: "A" });
  });

  it("counts a receipt a live chain's append consumed: an issuer whose deny reached this deployment only as a chain hop is not flagged allow-only", async () => {
    const { ctx, h, x, path } = await reviewed("review-chain-hops");
    const runtime_context = await delegationContext(null, 0);
    const { receipt } = await x.receipt({ verdict: "deny", runtimeContext: runtime_context });
    const hop = await h.call("/v1/chains/review-chain-hops/hops", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ entry: { hop_count: 0, receipt, runtime_context } }) });
    expect(hop.body).toMatchObject({ appended: true, nonce_consumed: true });
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toEqual({ flagged: false, allows: 0, others: 1, threshold: 3 });
    for (let i = 0; i < 3; i++) expect((await h.verify(await x.body())).body).toMatchObject({ decision: "accept", failures: [] });
    await waitOnExecutionContext(ctx);
    expect((await h.call(path)).body.review).toEqual({ flagged: false, allows: 3, others: 1, threshold: 3 });
    expect((await h.verify(await x.body())).body).toMatchObject({ failures: [], verifier_class: "A" });
    // The append is no decision: it is not on the per-minute chart.
    const stats = await h.admin("GET", "/v1/admin/stats?minutes=1440");
    expect(stats.body.totals[x.id.issuer]).toEqual({ ACCEPTED: 4 });
  });
});

describe("Level 0 receipts (CCS §10)", () => {
  it("the anchor holds the name of a Worker secret, never the secret, and only for an issuer of this organisation", async () => {
    const h = harness(env, createExecutionContext());
    const l = await issuerFor("level0-pin");
    expect((await h.pin({ ...l.anchor, org_id: "https://another-org.example", shared_secret: { secret: "LEGACY_HMAC_KEY" } })).body.error.code).toBe("ANCHOR_INVALID");
    expect((await h.pin({ ...l.anchor, shared_secret: { secret: env.LEGACY_HMAC_KEY } })).body.error.code).toBe("ANCHOR_INVALID");
    expect((await h.pin({ ...l.anchor, shared_secret: { secret: "LEGACY_HMAC_KEY" } })).status).toBe(200);
    const view = await h.call(`/v1/issuers/${encodeURIComponent(l.id.issuer)}`);
    expect(view.body.level0).toBe(true);
    expect(view.text).not.toContain("LEGACY_HMAC_KEY");
    expect(view.text).not.toContain(env.LEGACY_HMAC_KEY);
  });

  it("a level: 0 call for an issuer pinned for another organisation is LEVEL0_NOT_ACCEPTED, as documented, not UNTRUSTED_ISSUER", async () => {
    const h = harness(env, createExecutionContext());
    const other = await issuerFor("level0-other-org");
    // Pinned for its receipts (no shared secret: a pin refuses one for another organisation).
    expect((await h.pin({ ...other.anchor, org_id: "https://another-org.example" })).status).toBe(200);
    const { receipt, request } = await level0Receipt("level0-other-org");
    const refused = await h.verify({ receipt, request, audience: AUDIENCE, level: 0, issuer: other.id.issuer });
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ valid: false, decision: "reject", level: 0 });
    expect(codes(refused.body)).toEqual(["LEVEL0_NOT_ACCEPTED", "REPLAY_UNGUARDED"]);
    // An issuer of this organisation pinned without a shared secret is still UNTRUSTED_ISSUER.
    const own = await issuerFor("level0-own-org-no-secret");
    expect((await h.pin(own.anchor)).status).toBe(200);
    const untrusted = await h.verify({ receipt, request, audience: AUDIENCE, level: 0, issuer: own.id.issuer });
    expect(codes(untrusted.body)).toEqual(["UNTRUSTED_ISSUER", "REPLAY_UNGUARDED"]);
  });

  it("is accepted on the receipt route with level: 0 and the REPLAY_UNGUARDED warning; a secret the deployment lacks is a configuration error, not a pass", async () => {
    const h = harness(env, createExecutionContext());
    const l = await issuerFor("level0-route");
    await h.pin({ ...l.anchor, shared_secret: { secret: "LEGACY_HMAC_KEY" } });
    const { receipt, request } = await level0Receipt("level0-route");
    const ok = await h.verify({ receipt, request, audience: AUDIENCE, level: 0, issuer: l.id.issuer });
    expect(ok.body).toMatchObject({ valid: true, decision: "accept", level: 0, nonce_consumed: false, kid: null });
    expect(codes(ok.body)).toEqual(["REPLAY_UNGUARDED"]);
    const other = await h.verify({ receipt, request: { ...request, params: { query: "weather in Osaka" } }, audience: AUDIENCE, level: 0, issuer: l.id.issuer });
    expect(codes(other.body)).toEqual(["BINDING_MISMATCH", "REPLAY_UNGUARDED"]);
    expect((await h.verify({ receipt, request, audience: AUDIENCE, level: 0 })).status).toBe(400);
    const missing = await issuerFor("level0-missing-secret");
    // A name the deployment does not hold, or one of its own secrets, is refused at the pin.
    for (const secret of ["NOT_CONFIGURED_SECRET", "SIGNING_KEY", "ADMIN_TOKEN", "AUDIENCES"]) {
      const refused = await h.pin({ ...missing.anchor, shared_secret: { secret } });
      expect([refused.status, refused.body.error.code]).toEqual([400, "ANCHOR_INVALID"]);
    }
    // A secret removed after the pin is a configuration error at verification, never a pass.
    const withSecret = harness({ ...env, LATER_REMOVED_SECRET: "ab".repeat(32) } as typeof env, createExecutionContext());
    expect((await withSecret.pin({ ...missing.anchor, shared_secret: { secret: "LATER_REMOVED_SECRET" } })).status).toBe(200);
    expect((await h.verify({ receipt, request, audience: AUDIENCE, level: 0, issuer: missing.id.issuer })).body.error.code).toBe("SERVICE_MISCONFIGURED");
  });

  it("a v1.3 receipt's field 7 is accepted only when level 1 would accept the receipt too: signature, revoked key and spent nonce are checked, and the nonce is consumed", async () => {
    const h = harness(env, createExecutionContext());
    const l = await issuerFor("level0-v13");
    await h.pin({ ...l.anchor, shared_secret: { secret: "LEGACY_HMAC_KEY" } });
    const secret = fromHex(env.LEGACY_HMAC_KEY)!;
    const call = async (extra: Record<string, unknown> = {}) => {
      const { receipt, request } = await l.receipt({ legacySecret: secret });
      return { receipt: receipt as unknown as Record<string, unknown>, request, audience: AUDIENCE, level: 0, ...extra };
    };
    const honest = await call();
    const ok = await h.verify(honest);
    expect(ok.body).toMatchObject({ valid: true, decision: "accept", level: 0, nonce_consumed: true, kid: "k1" });
    expect(codes(ok.body)).toEqual([]);
    const again = await h.verify(honest);
    expect(again.body).toMatchObject({ valid: false, decision: "reject", level: 0 });
    expect(codes(again.body)).toContain("REPLAY_DETECTED");

    const spentFirst = await call();
    expect((await h.verify({ ...spentFirst, level: undefined })).body).toMatchObject({ valid: true, level: 1 });
    const spent = await h.verify(spentFirst);
    expect(spent.body.valid).toBe(false);
    expect(codes(spent.body)).toContain("REPLAY_DETECTED");

    const zeroed = await call();
    zeroed.receipt = { ...zeroed.receipt, signature: "0".repeat(128) };
    const forged = await h.verify(zeroed);
    expect(forged.body).toMatchObject({ valid: false, decision: "reject", level: 0, nonce_consumed: false });
    expect(codes(forged.body)).toContain("SIGNATURE_INVALID");

    const badMac = await call();
    badMac.receipt = { ...badMac.receipt, receipt: "0".repeat(32) };
    const refused = await h.verify(badMac);
    expect(refused.body).toMatchObject({ valid: false, nonce_consumed: false });
    expect(codes(refused.body)).toContain("SIGNATURE_INVALID");
    // The field-7 refusal consumed nothing: the honest receipt behind it is still good at level 1.

    const late = await call();
    expect((await h.revoke(l.id.issuer, "k1")).status).toBe(200);
    const revoked = await h.verify(late);
    expect(revoked.body).toMatchObject({ valid: false, decision: "reject", level: 0 });
    expect(codes(revoked.body).some((c: string) => c.includes("REVOKED"))).toBe(true);
  });

  it("a v1.3 receipt's field 7 cannot pass as a 7-field receipt by folding its extended fields into rule_summary (the payloads share their first six fields)", async () => {
    const h = harness(env, createExecutionContext());
    const l = await issuerFor("level0-downgrade");
    await h.pin({ ...l.anchor, shared_secret: { secret: "LEGACY_HMAC_KEY" } });
    const { receipt, request } = await l.receipt({ legacySecret: fromHex(env.LEGACY_HMAC_KEY)! });
    const r = receipt as unknown as Record<string, any>;
    const parts = legacyPayload(receipt).split("|");
    const folded = { trace_id: r.trace_id, verdict: r.verdict, timestamp: r.timestamp, tool: r.tool, params_hash: r.params_hash, rule_summary: parts.slice(5).join("|"), receipt: r.receipt };
    // The fold is exact: the 7-field payload of the folded receipt is the v1.3 payload, so only the form stops it.
    expect(level0Payload(folded)).toBe(legacyPayload(receipt));
    for (const mode of ["enforce", "audit"]) {
      const judged = await h.verify({ receipt: folded, request, audience: AUDIENCE, level: 0, issuer: l.id.issuer, mode });
      expect(judged.body.valid).toBe(false);
      expect(codes(judged.body)).toContain("MALFORMED_RECEIPT");
    }
    const piped = await h.verify({ receipt: { ...folded, tool: `${r.tool}|x`, rule_summary: r.rule_summary }, request, audience: AUDIENCE, level: 0, issuer: l.id.issuer });
    expect(codes(piped.body)).toContain("MALFORMED_RECEIPT");
    // The honest v1.3 receipt still passes at level 0, once.
    expect((await h.verify({ receipt, request, audience: AUDIENCE, level: 0 })).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("is refused by name in envelopes (same-org and cross-org), chain documents and live chains", async () => {
    const h = harness(env, createExecutionContext());
    const { receipt } = await level0Receipt("level0-refused");
    const base = { envelope_version: "1.3", original_receipt: receipt, parent_trace_id: receipt.trace_id, child_trace_id: "0123456789abcdef", delegation_reason: "x", hop_count: 1, previous_receipt_hash: "sha256:" + "0".repeat(64) };
    for (const envelope of [base, { ...base, sender_org_id: "https://sender.example", receiver_org_id: "https://relying-org.example", self_contained: true, trust_anchor_reference: "0".repeat(64), issuer_public_key: "A".repeat(43) }]) {
      const judged = await h.call("/v1/envelopes/verify", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ envelope, audience: AUDIENCE }) });
      expect(judged.status).toBe(200);
      expect(codes(judged.body)).toEqual(["LEVEL0_NOT_ACCEPTED"]);
    }
    const digest = await receiptDigest(receipt);
    const chain = { chain_id: "level0-doc", entries: [{ hop_count: 0, receipt }], summary_hash: "sha256:" + (await sha256Hex(digest)), total_hops: 1 };
    const verdict = await h.call("/v1/chains/verify", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ chain }) });
    expect(verdict.body.chain_valid).toBe(false);
    expect(verdict.body.failures.map((f: { code: string }) => f.code)).toContain("LEVEL0_NOT_ACCEPTED");
    const hop = await h.call("/v1/chains/level0-live/hops", { method: "POST", headers: JSON_HEADERS, body: JSON.stringify({ entry: { hop_count: 0, receipt } }) });
    expect(hop.status).toBe(422);
    expect(hop.body.error.code).toBe("LEVEL0_NOT_ACCEPTED");
  });
});
