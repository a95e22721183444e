/**
 * Answers a relying party can act on: `decision` is the go/no-go, only authenticated relying
 * parties consume nonces and only for their own audiences, bad input is a 400 and never an
 * outage, and this deployment publishes its own key in a pinnable form.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env.js";
import { receiptDigest, receiptHashOf } from "../../worker/protocol/chain.js";
import { sha256Hex } from "../../worker/protocol/digest.js";
import type { SignatureVerifier } from "../../worker/protocol/ed25519.js";
import { ADMIN_TOKEN, AUDIENCE, harness, issuerFor, RP_TOKEN, SECOND_AUDIENCE, TEST_NOW } from "../support/app-harness.js";
import { anchorFor, identity } from "../../vectors/ccs/factory.js";
import { anchorKvKey } from "../../worker/protocol/anchors.js";

const codes = (r: { body: { failures: { code: string }[] } }) => r.body.failures.map((f) => f.code);
const h = () => harness(env, createExecutionContext());
const json = (method: string, body: unknown, authorization?: string): RequestInit => ({
  method,
  headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) },
  body: typeof body === "string" ? body : JSON.stringify(body),
});
const admin = (method: string, body?: unknown): RequestInit => ({ ...json(method, body ?? {}, `Bearer ${ADMIN_TOKEN}`), ...(body === undefined ? { body: undefined } : {}) });

describe("decision is the one field a gate acts on", () => {
  it("a genuine deny receipt is valid evidence whose decision is reject (the honest allow beside it is accept)", async () => {
    const issuer = await issuerFor("gate-deny");
    await h().pin(issuer.anchor);
    const deny = await h().verify(await issuer.body({ verdict: "deny" }));
    expect(deny.body).toMatchObject({ valid: true, decision: "reject", failures: [], enforcement: { action: "block", verdict: "deny", outcome_status: "confirmed" } });
    expect((await h().verify(await issuer.body())).body).toMatchObject({ valid: true, decision: "accept" });
  });

  it("a genuine escalate receipt defers", async () => {
    const issuer = await issuerFor("gate-escalate");
    await h().pin(issuer.anchor);
    expect((await h().verify(await issuer.body({ verdict: "escalate" }))).body).toMatchObject({ valid: true, decision: "defer", enforcement: { action: "defer" } });
  });

  it("an allow whose outcome the caller reports unknown defers (the conservative path), with its warning", async () => {
    const issuer = await issuerFor("gate-unknown");
    await h().pin(issuer.anchor);
    const res = await h().verify(await issuer.body({}, { outcome_status: "unknown" }));
    expect(res.body).toMatchObject({ valid: true, decision: "defer", enforcement: { action: "conservative" } });
    expect(codes(res)).toEqual(["OUTCOME_INDETERMINATE"]);
  });

  it("every audit-mode answer is audit, whatever it found: valid, expired at a past `at`, forged", async () => {
    const issuer = await issuerFor("gate-audit");
    await h().pin(issuer.anchor);
    const body = await issuer.body();
    expect((await h().verify({ ...body, mode: "audit" })).body).toMatchObject({ valid: true, decision: "audit" });
    const expired = await h().verify({ receipt: body.receipt, audience: AUDIENCE, mode: "audit", at: body.receipt.expires_at + 3600 });
    expect(expired.body).toMatchObject({ valid: false, decision: "audit" });
    expect(codes(expired)).toEqual(["FRESHNESS_EXPIRED"]);
    const forged = { ...body, mode: "audit", receipt: { ...body.receipt, tool: "payments.refund" } };
    expect((await h().verify(forged)).body).toMatchObject({ valid: false, decision: "audit" });
  });

  it("the envelope route answers the same way: a valid deny inside an envelope is reject", async () => {
    const issuer = await issuerFor("gate-envelope");
    await h().pin(issuer.anchor);
    const { receipt } = await issuer.receipt({ verdict: "deny" });
    const envelope = {
      envelope_version: "1.3", original_receipt: receipt, parent_trace_id: receipt.trace_id, child_trace_id: "0123456789abcdef",
      delegation_reason: "hand-off", hop_count: 1, previous_receipt_hash: receiptHashOf(await receiptDigest(receipt as never)),
    };
    const res = await h().call("/v1/envelopes/verify", json("POST", { envelope, audience: AUDIENCE }));
    expect(res.body.failures).toEqual([]);
    expect(res.body).toMatchObject({ valid: true, decision: "reject", enforcement: { action: "block" } });
  });
});

describe("relying parties authenticate", () => {
  for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify", "/v1/chains/verify", "/v1/chains/some-chain/hops", "/v1/chains/some-chain"]) {
    it(`${path} refuses a missing or unknown token with 401 and WWW-Authenticate`, async () => {
      for (const authorization of ["", "Bearer not-a-registered-token-000000000000000", `Basic ${RP_TOKEN}`, RP_TOKEN]) {
        const res = await h().call(path, path.endsWith("some-chain") ? { headers: { authorization } } : json("POST", {}, authorization));
        expect(res.status).toBe(401);
        expect(res.body.error).toEqual({ code: "UNAUTHORIZED", detail: expect.any(String) });
      }
      const res = await h().call(path, json("POST", {}, ""));
      expect(res.status).toBe(401);
    });
  }

  it("the 401 carries a Bearer challenge", async () => {
    const app = harness(env, createExecutionContext());
    const res = await (await import("../../worker/app.js")).createApp({ now: () => TEST_NOW }).request("/v1/receipts/verify", json("POST", {}), env, createExecutionContext());
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm=/);
    const adminRes = await app.call("/v1/admin/relying-parties", json("POST", {}, ""));
    expect(adminRes.status).toBe(401);
  });

  it("an anonymous holder of a receipt cannot burn its nonce: the relying party then accepts it", async () => {
    const issuer = await issuerFor("rp-burn");
    await h().pin(issuer.anchor);
    const body = await issuer.body();
    expect((await h().call("/v1/receipts/verify", json("POST", body, ""))).status).toBe(401);
    expect((await h().verify(body)).body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });

  it("a token may only verify for its own audiences: 403 AUDIENCE_NOT_ALLOWED, no list of what is served, nonce intact", async () => {
    const issuer = await issuerFor("rp-audience");
    await h().pin(issuer.anchor);
    const created = await h().call("/v1/admin/relying-parties", admin("POST", { name: "second-only", audiences: [SECOND_AUDIENCE] }));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "second-only", audiences: [SECOND_AUDIENCE], token: expect.stringMatching(/^csrp_[A-Za-z0-9_-]{43}$/) });
    const body = await issuer.body();
    const refused = await h().call("/v1/receipts/verify", json("POST", body, `Bearer ${created.body.token}`));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("AUDIENCE_NOT_ALLOWED");
    expect(refused.text).not.toContain(AUDIENCE);
    expect(refused.text).not.toContain(SECOND_AUDIENCE);
    expect((await h().verify(body)).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("stores a token only as its SHA-256, and a deleted relying party's token is refused at once", async () => {
    const created = await h().call("/v1/admin/relying-parties", admin("POST", { name: "short-lived", audiences: [AUDIENCE] }));
    const token: string = created.body.token;
    const { keys } = await env.ANCHORS.list();
    for (const { name } of keys) expect(JSON.stringify(await env.ANCHORS.get(name)) + name).not.toContain(token);
    const issuer = await issuerFor("rp-deleted");
    await h().pin(issuer.anchor);
    const app = h();
    expect((await app.call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`))).status).toBe(200);
    expect((await app.call("/v1/admin/relying-parties/short-lived", admin("DELETE"))).body).toEqual({ name: "short-lived", deleted: true });
    expect((await app.call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`))).status).toBe(401);
    expect((await app.call("/v1/admin/relying-parties/short-lived", admin("DELETE"))).status).toBe(404);
  });

  it("replaces a relying party's token in place: the old token is refused at once, the new one verifies for the same audiences", async () => {
    const created = await h().call("/v1/admin/relying-parties", admin("POST", { name: "rotating", audiences: [AUDIENCE], min_verifier_class: "C" }));
    const oldToken: string = created.body.token;
    const issuer = await issuerFor("rp-rotated");
    await h().pin(issuer.anchor);
    const app = h();
    const audit = async (token: string) => app.call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`));
    expect((await audit(oldToken)).status).toBe(200);
    const supplied = "rotating-party-supplied-token-0123456789";
    const rotated = await app.call("/v1/admin/relying-parties/rotating/token", admin("POST", { token: supplied }));
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ name: "rotating", token: supplied, audiences: [AUDIENCE], min_verifier_class: { [AUDIENCE]: "C" } });
    expect((await audit(oldToken)).status).toBe(401);
    expect((await audit(supplied)).status).toBe(200);
    // The old token's record is kept, retired, only until KV expires it (RETIRED_TOKEN_TTL_SECONDS,
    // review rv-79: it stays taken meanwhile); it authenticates nothing (401 above).
    const { keys } = await env.ANCHORS.list({ prefix: "rp-token:" });
    const oldKey = `rp-token:${await sha256Hex(oldToken)}`;
    const retired = keys.find((k) => k.name === oldKey);
    expect(retired?.expiration).toBeGreaterThan(0);
    // No body at all: a generated token.
    const generated = await app.call("/v1/admin/relying-parties/rotating/token", { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(generated.status).toBe(200);
    expect(generated.body.token).toMatch(/^csrp_[A-Za-z0-9_-]{43}$/);
    expect((await audit(supplied)).status).toBe(401);
    expect((await audit(generated.body.token)).status).toBe(200);
  });

  it("refuses a token rotation for an unknown party, a bad body, a taken token and one of the deployment's own secrets", async () => {
    await h().call("/v1/admin/relying-parties", admin("POST", { name: "rot-a", audiences: [AUDIENCE], token: "rot-a-token-0123456789abcdef0123456789" }));
    await h().call("/v1/admin/relying-parties", admin("POST", { name: "rot-b", audiences: [AUDIENCE], token: "rot-b-token-0123456789abcdef0123456789" }));
    const rotate = (name: string, body: unknown) => h().call(`/v1/admin/relying-parties/${name}/token`, admin("POST", body));
    expect((await rotate("rot-missing", {})).status).toBe(404);
    for (const bad of [{ token: "short" }, { token: 5 }, { extra: 1 }, []]) {
      const res = await rotate("rot-a", bad);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
    const taken = await rotate("rot-a", { token: "rot-b-token-0123456789abcdef0123456789" });
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe("RELYING_PARTY_EXISTS");
    const own = await rotate("rot-a", { token: ADMIN_TOKEN });
    expect(own.status).toBe(400);
    expect((await h().call("/v1/admin/relying-parties/rot-a/token", { method: "POST", headers: { authorization: `Bearer ${RP_TOKEN}` } })).status).toBe(401);
  });

  it("lists relying parties without their tokens; refuses a taken name, unknown audiences and bad names", async () => {
    await h().call("/v1/admin/relying-parties", admin("POST", { name: "listed", audiences: [AUDIENCE] }));
    const list = await h().call("/v1/admin/relying-parties", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(list.body.relying_parties.find((p: any) => p.name === "listed")).toEqual({ name: "listed", audiences: [AUDIENCE], created_at: TEST_NOW });
    expect(list.text).not.toMatch(/token/);
    expect((await h().call("/v1/admin/relying-parties", admin("POST", { name: "listed", audiences: [AUDIENCE] }))).body.error.code).toBe("RELYING_PARTY_EXISTS");
    for (const bad of [
      { name: "x", audiences: ["https://not-served.example"] },
      { name: "x", audiences: [] },
      { name: "bad name", audiences: [AUDIENCE] },
      { name: "x", audiences: [AUDIENCE], token: "short" },
      { name: "x", audiences: [AUDIENCE, AUDIENCE] },
      { name: "x", audiences: [AUDIENCE], extra: 1 },
    ]) {
      const res = await h().call("/v1/admin/relying-parties", admin("POST", bad));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("lists the parties a page at a time with next_cursor, so none is left out however many there are (a KV list stops at 1,000)", async () => {
    const names = Array.from({ length: 130 }, (_, i) => `paged-${String(i).padStart(3, "0")}`);
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(names.slice(i, i + 10).map((name) => h().call("/v1/admin/relying-parties", admin("POST", { name, audiences: [AUDIENCE] }))));
    }
    const get = (query: string) => h().call(`/v1/admin/relying-parties${query}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await get(cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`);
      expect(page.status).toBe(200);
      expect(page.body.relying_parties.length).toBeLessThanOrEqual(100);
      seen.push(...page.body.relying_parties.map((p: { name: string }) => p.name));
      cursor = page.body.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBeGreaterThan(1);
    for (const name of names) expect(seen).toContain(name);
    expect(new Set(seen).size).toBe(seen.length);
    const small = await get("?limit=7");
    expect(small.body.relying_parties).toHaveLength(7);
    expect(typeof small.body.next_cursor).toBe("string");
    // A cursor is one this deployment answered, or 400: never handed to KV to judge.
    const next: string = small.body.next_cursor;
    const tampered = next.slice(0, -1) + (next.endsWith("0") ? "1" : "0");
    const unsealed = next.slice(0, next.lastIndexOf("."));
    expect((await get(`?limit=7&cursor=${encodeURIComponent(next)}`)).body.relying_parties[0].name).toBe(seen[7]);
    for (const bad of ["?limit=0", "?limit=101", "?limit=x", "?limit=1e2", "?cursor=", "?limit=5&limit=6", "?page=2", "?cursor=bogus", "?cursor=zzzz", `?cursor=${encodeURIComponent(tampered)}`, `?cursor=${encodeURIComponent(unsealed)}`, `?cursor=.${"0".repeat(32)}`]) {
      const res = await get(bad);
      expect(res.status, bad).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("refuses the names . and ..: a URL normalises them away, so such a party could never be deleted and its token never revoked", async () => {
    // A DELETE /v1/admin/relying-parties/.. (or %2E%2E) reaches /v1/admin/ once the URL is parsed: no route.
    expect((await h().call("/v1/admin/relying-parties/..", admin("DELETE"))).status).toBe(404);
    for (const name of [".", ".."]) {
      const res = await h().call("/v1/admin/relying-parties", admin("POST", { name, audiences: [AUDIENCE] }));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
    for (const name of ["...", ".a", "a..", "-"]) {
      expect((await h().call("/v1/admin/relying-parties", admin("POST", { name, audiences: [AUDIENCE] }))).status).toBe(201);
      expect((await h().call(`/v1/admin/relying-parties/${name}`, admin("DELETE"))).status).toBe(200);
    }
  });
});

describe("bad input is a 400, never an outage", () => {
  it("a null receipt is 400 MALFORMED_RECEIPT", async () => {
    const issuer = await issuerFor("null-receipt");
    const res = await h().verify({ ...(await issuer.body()), receipt: null });
    expect(res.status).toBe(400);
    expect(codes(res)).toEqual(["MALFORMED_RECEIPT"]);
  });

  it("a bundle whose manifest.runs is not a list is a manifest problem, not a 5xx", async () => {
    const bundle = { bundle_version: "ec-bundle/2", manifest: { schema_version: "ec-agent/2", rows: [], runs: 5 }, rows: {} };
    const res = await h().call("/v1/bundles/replay", json("POST", { bundle }));
    expect(res.status).toBe(200);
    expect(res.body.decision).toBe("manifest_invalid");
    expect(res.body.manifest_problems).toContainEqual({ code: "MANIFEST_MALFORMED", detail: expect.stringContaining("\"runs\"") });
  });

  it("no body of the wrong shape makes any route answer 5xx", async () => {
    const shapes: unknown[] = [null, [], "x", 5, {}, { receipt: null, audience: AUDIENCE }, { receipt: 5, audience: AUDIENCE, request: null },
      { envelope: null, audience: AUDIENCE }, { envelope: { original_receipt: null }, audience: AUDIENCE }, { chain: null }, { chain: { entries: [null] } },
      { entry: null }, { entry: { hop_count: 0, receipt: null } }, { bundle: null }, { bundle: { manifest: null } }, { receipt: null, corpus: null, events: null },
      { claim: null, spans: null }, { issuer: null, kid: null }, { name: null, audiences: null }];
    const routes: [string, string, boolean][] = [
      ["POST", "/v1/receipts/verify", false], ["POST", "/v1/envelopes/verify", false], ["POST", "/v1/chains/verify", false],
      ["POST", "/v1/chains/c1/hops", false], ["POST", "/v1/ec/receipts/verify", false], ["POST", "/v1/bundles/replay", false],
      ["POST", "/v1/support/evaluate", false], ["PUT", "/v1/admin/anchors", true], ["POST", "/v1/admin/anchors/revoke", true],
      ["POST", "/v1/admin/relying-parties", true],
    ];
    for (const [method, path, asAdmin] of routes) {
      for (const shape of shapes) {
        const res = await h().call(path, asAdmin ? admin(method, shape) : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(shape) });
        expect(res.status, `${method} ${path} ${JSON.stringify(shape)}`).toBeLessThan(500);
        expect(res.body.error, `${method} ${path} ${JSON.stringify(shape)}`).toEqual(res.status >= 400 ? { code: expect.any(String), detail: expect.any(String) } : undefined);
      }
    }
  });

  it("a programming error is 500 INTERNAL_ERROR, in the one error shape, with nothing internal in it", async () => {
    const broken: SignatureVerifier = { verify: () => Promise.reject(new TypeError("cannot read properties of undefined (at /srv/verify.ts:1)")) };
    const issuer = await issuerFor("internal-error");
    await h().pin(issuer.anchor);
    const res = await harness(env, createExecutionContext(), { verifier: broken }).verify(await issuer.body());
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ valid: false, decision: "reject", error: { code: "INTERNAL_ERROR" } });
    expect(res.text).not.toMatch(/srv|\.ts|TypeError/);
  });
});

describe("this deployment's own identity", () => {
  it("publishes its key at /.well-known/ccs-issuer in the form the anchor pin takes, pinnable with one call", async () => {
    const own = await h().call("/.well-known/ccs-issuer");
    expect(own.status).toBe(200);
    expect(own.body).toEqual({
      issuer: "https://countersign.test",
      org_id: "https://relying-org.example",
      chain_sealer: true,
      keys: [{ kid: "test-signing-1", alg: "Ed25519", public_key: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) }],
    });
    expect(own.text).not.toContain((env as Env).SIGNING_KEY!);
    const pinned = await h().call("/v1/admin/anchors", admin("PUT", own.body));
    expect(pinned.status).toBe(200);
    expect(pinned.body.keys).toEqual([{ kid: "test-signing-1", fingerprint: own.body.keys[0].fingerprint }]);
  });

  it("a deployment without a signing key answers 500 naming what to configure, never a secret", async () => {
    const unconfigured = { ...env, SIGNING_KEY: undefined, LEGACY_HMAC_KEY: "abc" } as unknown as Env;
    const res = await harness(unconfigured, createExecutionContext()).call("/.well-known/ccs-issuer");
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe("SERVICE_MISCONFIGURED");
    expect(res.body.error.detail).toMatch(/SIGNING_KEY/);
  });
});

describe("readings of the draft", () => {
  it("request binding does not need the receipt's timestamp (the verdict time) to equal the Command's", async () => {
    const issuer = await issuerFor("timestamp-binding");
    await h().pin(issuer.anchor);
    const body = await issuer.body();
    expect(body.receipt.timestamp).not.toBe(body.request.timestamp);
    expect((await h().verify(body)).body).toMatchObject({ valid: true, decision: "accept" });
    const moved = await h().verify({ ...(await issuer.body()), request: { ...body.request, timestamp: body.request.timestamp + 1 } });
    expect(codes(moved)).toContain("BINDING_MISMATCH");
  });
});

describe("enforce calls are retry-safe with Idempotency-Key", () => {
  const keyed = (key: string, body: unknown, token = RP_TOKEN): RequestInit => ({
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}`, "idempotency-key": key },
    body: JSON.stringify(body),
  });

  it("a retry with the same key and receipt gets the first answer, not REPLAY_DETECTED; without the key it is a replay", async () => {
    const issuer = await issuerFor("idempotent");
    await h().pin(issuer.anchor);
    const body = await issuer.body();
    await h().verify({ ...(await issuer.body()), mode: "audit" });
    const first = await h().call("/v1/receipts/verify", keyed("call-7f3a", body));
    expect(first.body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
    const later = harness(env, createExecutionContext(), { now: () => TEST_NOW + 7 });
    const retry = await later.call("/v1/receipts/verify", keyed("call-7f3a", body));
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    const { idempotent_replay, ...same } = retry.body;
    expect(same).toEqual(first.body);
    expect(idempotent_replay).toBe(true);
    expect(codes(await h().verify(body))).toEqual(["REPLAY_DETECTED"]);
    expect(codes(await h().call("/v1/receipts/verify", keyed("another-key", body)))).toEqual(["REPLAY_DETECTED"]);
  });

  it("the first answer is kept, not re-decided: a retry of a deferred call is deferred again; the same key with another call is a replay", async () => {
    const issuer = await issuerFor("idempotent-first-answer");
    await h().pin(issuer.anchor);
    const body = await issuer.body({}, { outcome_status: "indeterminate" });
    expect((await h().call("/v1/receipts/verify", keyed("k-defer", body))).body.decision).toBe("defer");
    expect((await h().call("/v1/receipts/verify", keyed("k-defer", body))).body).toMatchObject({ decision: "defer", idempotent_replay: true });
    const { outcome_status: _dropped, ...without } = body;
    const changed = await h().call("/v1/receipts/verify", keyed("k-defer", without));
    expect(changed.body.decision).toBe("reject");
    expect(codes(changed)).toEqual(["REPLAY_DETECTED"]);
  });

  it("a key is the relying party's own: another party's call with the same key is a replay", async () => {
    const issuer = await issuerFor("idempotent-scope");
    await h().pin(issuer.anchor);
    const other = await h().call("/v1/admin/relying-parties", admin("POST", { name: "same-audience", audiences: [AUDIENCE] }));
    const body = await issuer.body();
    expect((await h().call("/v1/receipts/verify", keyed("shared-key", body))).body.decision).toBe("accept");
    expect(codes(await h().call("/v1/receipts/verify", keyed("shared-key", body, other.body.token)))).toEqual(["REPLAY_DETECTED"]);
  });

  it("a retry of a call whose first answer never reached the caller (a timeout after the claim landed) still accepts", async () => {
    const issuer = await issuerFor("idempotent-timeout");
    await h().pin(issuer.anchor);
    const body = await issuer.body();
    void h().call("/v1/receipts/verify", keyed("lost-answer", body));
    await new Promise((r) => setTimeout(r, 50));
    const retried = await h().call("/v1/receipts/verify", keyed("lost-answer", body));
    expect(retried.body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });

  it("refuses a malformed Idempotency-Key with 400", async () => {
    const issuer = await issuerFor("idempotent-bad");
    const res = await h().call("/v1/receipts/verify", keyed("has space", await issuer.body()));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
  });
});

describe("keys and tokens belong to one holder", () => {
  it("a key pinned for one issuer cannot be pinned for another (revoking it must revoke it everywhere); re-pinning its own issuer is fine", async () => {
    const x = await issuerFor("key-holder-x");
    expect((await h().pin(x.anchor)).status).toBe(200);
    expect((await h().pin(x.anchor)).status).toBe(200);
    const other = await h().pin({ ...x.anchor, issuer: "https://key-holder-z.example" });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("ANCHOR_KEY_IN_USE");
    expect((await h().call(`/v1/issuers/${encodeURIComponent("https://key-holder-z.example")}`)).status).toBe(404);
  });

  it("a key that concurrent pins of its issuer dropped from the anchor's history can still be revoked by fingerprint, and then never pinned again", async () => {
    const issuer = "https://lost-key.example";
    const [k0, k1, k2] = await Promise.all(["k0", "k1", "k2"].map((kid) => identity(`lost-key/${kid}`, issuer, kid)));
    const anchorKey = anchorKvKey(issuer);
    expect((await h().pin(anchorFor(k0))).status).toBe(200);
    const before = await env.ANCHORS.get(anchorKey);
    const pinnedK1 = await h().pin(anchorFor(k1));
    expect(pinnedK1.status).toBe(200);
    const fingerprint: string = pinnedK1.body.keys[0].fingerprint;
    // A pin of k2 that read the anchor before k1's was written (KV has no compare-and-set): its answer keeps k0, not k1.
    await env.ANCHORS.put(anchorKey, before!);
    expect((await h().pin(anchorFor(k2))).status).toBe(200);
    const view = (await h().call(`/v1/issuers/${encodeURIComponent(issuer)}`)).body;
    const listed = [...view.keys, ...view.previous_keys].map((k: { kid: string }) => k.kid);
    expect(listed).not.toContain("k1");
    // Before the key-holder record kept it, this was 404: the key was trusted once and could never be revoked.
    const byKid = await h().admin("POST", "/v1/admin/anchors/revoke", { issuer, kid: "k1" });
    expect(byKid.status).toBe(404);
    const revoked = await h().admin("POST", "/v1/admin/anchors/revoke", { issuer, fingerprint });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body).toMatchObject({ issuer, kid: "k1", fingerprint });
    const again = await h().pin(anchorFor(k1));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("ANCHOR_KEY_REVOKED");
    // Another issuer's key is not this issuer's to revoke, lost or not.
    const foreign = await h().pin((await issuerFor("lost-key-foreign")).anchor);
    expect(foreign.status).toBe(200);
    const notOurs = await h().admin("POST", "/v1/admin/anchors/revoke", { issuer, fingerprint: foreign.body.keys[0].fingerprint });
    expect(notOurs.status).toBe(404);
  });

  it("a supplied relying-party token that is already someone's is refused, and the first party keeps it", async () => {
    const token = "shared-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    expect((await h().call("/v1/admin/relying-parties", admin("POST", { name: "first-holder", audiences: [AUDIENCE], token }))).status).toBe(201);
    const second = await h().call("/v1/admin/relying-parties", admin("POST", { name: "second-holder", audiences: [AUDIENCE], token }));
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe("RELYING_PARTY_EXISTS");
    const issuer = await issuerFor("token-holder");
    await h().pin(issuer.anchor);
    const res = await h().call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`));
    expect(res.status).toBe(200);
    const listed = await h().call("/v1/admin/relying-parties", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(listed.body.relying_parties.map((p: { name: string }) => p.name)).not.toContain("second-holder");
  });

  it("a supplied relying-party token may not be one of this deployment's own secrets: the party would hold intake or admin with it", async () => {
    const secret = "own-secret-token-0123456789abcdef0123456789";
    for (const name of ["ADMIN_TOKEN", "INTAKE_TOKEN", "LEDGER_SHARD_KEY"]) {
      const app = harness({ ...env, [name]: secret } as Env, createExecutionContext());
      const adminToken = name === "ADMIN_TOKEN" ? secret : ADMIN_TOKEN;
      const res = await app.call("/v1/admin/relying-parties", json("POST", { name: "secret-holder", audiences: [AUDIENCE], token: secret }, `Bearer ${adminToken}`));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
      expect(res.text).not.toContain(secret);
    }
    // A key written in hex is the same key in any case of its digits (SIGNING_KEY's uppercase was registered 201).
    for (const name of ["SIGNING_KEY", "LEGACY_HMAC_KEY"]) {
      const key = (env as unknown as Record<string, string>)[name];
      for (const token of [key, key.toUpperCase()]) {
        const res = await h().call("/v1/admin/relying-parties", admin("POST", { name: "secret-holder", audiences: [AUDIENCE], token }));
        expect([name, res.status, res.body.error?.code]).toEqual([name, 400, "MALFORMED_REQUEST"]);
        expect(res.text).not.toContain(token);
      }
    }
    const fine = await h().call("/v1/admin/relying-parties", admin("POST", { name: "secret-holder", audiences: [AUDIENCE], token: secret }));
    expect(fine.status).toBe(201);
  });

  it("a supplied relying-party token may not be a Level 0 key a pin can name: the party could compute the HMAC of a 7-field receipt", async () => {
    // Any secret in a Level 0 key's form (64+ lowercase hex), under any name, was registered 201.
    const l0 = "ab".repeat(32);
    const app = harness({ ...env, PARTNER_L0_KEY: l0 } as Env, createExecutionContext());
    for (const token of [l0, l0.toUpperCase()]) {
      const res = await app.call("/v1/admin/relying-parties", json("POST", { name: "l0-holder", audiences: [AUDIENCE], token }, `Bearer ${ADMIN_TOKEN}`));
      expect([res.status, res.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
      expect(res.text).not.toContain(token);
    }
    // The demo party's own token is no Level 0 key (no anchor may name DEMO_RP_TOKEN), whatever its form: npm start registers it.
    const demo = harness({ ...env, DEMO_RP_TOKEN: "ef".repeat(32) } as Env, createExecutionContext());
    const own = await demo.call("/v1/admin/relying-parties", json("POST", { name: "demo-holder", audiences: [AUDIENCE], token: "ef".repeat(32) }, `Bearer ${ADMIN_TOKEN}`));
    expect(own.status).toBe(201);
    // Hex of that length that the deployment does not hold is a token like any other.
    const other = await app.call("/v1/admin/relying-parties", json("POST", { name: "l0-holder", audiences: [AUDIENCE], token: "cd".repeat(32) }, `Bearer ${ADMIN_TOKEN}`));
    expect(other.status).toBe(201);
  });

  it("a Level 0 pin may not name a key a relying party already holds as its token: that party could make the issuer's Level 0 receipts", async () => {
    // The party registered before the deployment held the key (registration refuses it since); the pin was 200.
    const key = "3c".repeat(32);
    const early = await h().call("/v1/admin/relying-parties", admin("POST", { name: "early-holder", audiences: [AUDIENCE], token: key }));
    expect([early.status, early.text]).toEqual([201, early.text]);
    const app = harness({ ...env, PARTNER_L0_KEY: key } as Env, createExecutionContext());
    const issuer = await issuerFor("l0-held-by-party");
    const refused = await app.pin({ ...issuer.anchor, shared_secret: { secret: "PARTNER_L0_KEY" } });
    expect([refused.status, refused.body.error?.code]).toEqual([400, "ANCHOR_INVALID"]);
    expect(refused.text).not.toContain(key);
    // In uppercase hex the token is the same key. (Deleted through the isolate that found the token, which caches a found one.)
    expect((await app.call("/v1/admin/relying-parties/early-holder", admin("DELETE"))).status).toBe(200);
    expect((await h().call("/v1/admin/relying-parties", admin("POST", { name: "early-holder", audiences: [AUDIENCE], token: key.toUpperCase() }))).status).toBe(201);
    expect((await app.pin({ ...issuer.anchor, shared_secret: { secret: "PARTNER_L0_KEY" } })).status).toBe(400);
    expect((await app.call("/v1/admin/relying-parties/early-holder", admin("DELETE"))).status).toBe(200);
    expect((await app.pin({ ...issuer.anchor, shared_secret: { secret: "PARTNER_L0_KEY" } })).status).toBe(200);
  });

  it("a token in a Level 0 key's form is taken in one letter case only: a mixed-case one escaped the pin's look-up of a held key", async () => {
    // Review rv-73: "3C3c…3c" was registered 201 and a later pin naming a secret of "3c3c…3c" was 200,
    // since only the token's SHA-256 is kept and the pin looked up the key as written and in uppercase.
    const key = "5d".repeat(32);
    const mixed = "5D" + "5d".repeat(31);
    const registered = await h().call("/v1/admin/relying-parties", admin("POST", { name: "mixed-holder", audiences: [AUDIENCE], token: mixed }));
    expect([registered.status, registered.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    expect(registered.text).not.toContain(mixed);
    const party = await h().call("/v1/admin/relying-parties", admin("POST", { name: "mixed-holder", audiences: [AUDIENCE] }));
    expect(party.status).toBe(201);
    const rotated = await h().call("/v1/admin/relying-parties/mixed-holder/token", admin("POST", { token: mixed }));
    expect([rotated.status, rotated.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    const app = harness({ ...env, PARTNER_L0_KEY: key } as Env, createExecutionContext());
    const issuer = await issuerFor("l0-mixed-case");
    expect((await app.pin({ ...issuer.anchor, shared_secret: { secret: "PARTNER_L0_KEY" } })).status).toBe(200);
    // One case, or hex not of that form (odd length), is a token like any other.
    for (const [name, token] of [["lower-hex", "7e".repeat(32)], ["upper-hex", "7F".repeat(32)], ["odd-hex", "Ab".repeat(32) + "c"]]) {
      expect([name, (await h().call("/v1/admin/relying-parties", admin("POST", { name, audiences: [AUDIENCE], token }))).status]).toEqual([name, 201]);
    }
  });

  it("a token authenticates only while its name's record names it: two registrations racing for one name leave no token that a delete cannot revoke", async () => {
    // KV has no compare-and-set: two concurrent registrations of one name both pass the name
    // check and both write; the name keeps the last, and the first token's record stays behind.
    const first = await h().call("/v1/admin/relying-parties", admin("POST", { name: "raced-name", audiences: [AUDIENCE] }));
    expect(first.status).toBe(201);
    const loser: string = first.body.token;
    const winner = "raced-name-winner-token-0123456789abcdef";
    const record = { name: "raced-name", audiences: [AUDIENCE], token_sha256: await sha256Hex(winner), created_at: TEST_NOW, registration: "00000000000000aa" };
    await env.ANCHORS.put("rp:raced-name", JSON.stringify(record));
    await env.ANCHORS.put(`rp-token:${record.token_sha256}`, JSON.stringify(record));
    const issuer = await issuerFor("raced-name");
    await h().pin(issuer.anchor);
    const audit = async (token: string) => (await h().call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`))).status;
    expect(await audit(winner)).toBe(200);
    expect(await audit(loser)).toBe(401);
    expect((await h().call("/v1/admin/relying-parties/raced-name", admin("DELETE"))).status).toBe(200);
    expect([await audit(winner), await audit(loser)]).toEqual([401, 401]);
  });

  it("two parties given one token at once (each call passed the token check): deleting or rotating the one the token does not authenticate leaves the other its token", async () => {
    // Shown live (review rv-62): rotations of two parties to one supplied token, sent at once, both
    // answered 200 (7 times in 15); the token's record holds the last written party, and a delete of
    // the other then deleted that record too, leaving a listed party no token authenticates.
    const shared = "shared-by-two-parties-0123456789abcdef";
    const sha = await sha256Hex(shared);
    const issuer = await issuerFor("shared-token");
    await h().pin(issuer.anchor);
    const audit = async (token: string) => (await h().call("/v1/receipts/verify", json("POST", { ...(await issuer.body()), mode: "audit" }, `Bearer ${token}`))).status;
    for (const act of ["delete", "rotate"] as const) {
      const [x, y] = [`shared-x-${act}`, `shared-y-${act}`];
      const lost = { name: x, audiences: [AUDIENCE], token_sha256: sha, created_at: TEST_NOW, registration: "00000000000000b1" };
      const won = { name: y, audiences: [AUDIENCE], token_sha256: sha, created_at: TEST_NOW, registration: "00000000000000b2" };
      await env.ANCHORS.put(`rp:${x}`, JSON.stringify(lost));
      await env.ANCHORS.put(`rp:${y}`, JSON.stringify(won));
      await env.ANCHORS.put(`rp-token:${sha}`, JSON.stringify(won));
      expect(await audit(shared)).toBe(200);
      const done = act === "delete" ? await h().call(`/v1/admin/relying-parties/${x}`, admin("DELETE")) : await h().call(`/v1/admin/relying-parties/${x}/token`, admin("POST", {}));
      expect(done.status).toBe(200);
      // Still the token of y, the party it authenticated all along; then y's own delete revokes it.
      expect(await audit(shared)).toBe(200);
      expect(JSON.parse((await env.ANCHORS.get(`rp-token:${sha}`))!).name).toBe(y);
      expect((await h().call(`/v1/admin/relying-parties/${y}`, admin("DELETE"))).status).toBe(200);
      expect(await audit(shared)).toBe(401);
      if (act === "rotate") await h().call(`/v1/admin/relying-parties/${x}`, admin("DELETE"));
    }
  });

  it("a strict sequence window cannot be split over ledger shards", async () => {
    const issuer = await issuerFor("window-shards");
    const res = await h().pin({ ...issuer.anchor, sequence_policy: "window", ledger_shards: 4 });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("ANCHOR_INVALID");
  });
});
