import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../worker/env.js";
import type { LedgerStub } from "../../worker/stores.js";
import { DISCARD_LIMIT } from "../../worker/http.js";
import { signReceipt } from "../../worker/protocol/issue.js";
import type { UnsignedReceipt } from "../../worker/protocol/receipt.js";
import { ADMIN_TOKEN, AUDIENCE, harness, issuerFor, SECOND_AUDIENCE, TEST_NOW } from "../support/app-harness.js";

const codes = (r: { body: { failures: { code: string }[] } }) => r.body.failures.map((f) => f.code);

describe("stateless failures never consume a nonce", () => {
  it("a forged signature never consumes a nonce: the genuine receipt is accepted afterwards", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("forged-first");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const genuine = await issuer.body();
    const forged = { ...genuine, receipt: { ...genuine.receipt, signature: genuine.receipt.signature.replace(/^./, (c: string) => (c === "0" ? "1" : "0")) } };
    const first = await h.verify(forged);
    expect(codes(first)).toEqual(["SIGNATURE_INVALID"]);
    expect(first.body.nonce_consumed).toBe(false);
    const second = await h.verify(genuine);
    expect(second.body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });

  it("a wrong audience never consumes a nonce", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("audience-first");
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    const elsewhere = await h.verify({ ...genuine, audience: SECOND_AUDIENCE });
    expect(codes(elsewhere)).toEqual(["AUDIENCE_MISMATCH"]);
    expect(elsewhere.body.nonce_consumed).toBe(false);
    expect((await h.verify(genuine)).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("an expired receipt never consumes a nonce", async () => {
    const later = harness(env, createExecutionContext(), { now: () => TEST_NOW + 3600 });
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("expired-first");
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    const expired = await later.verify(genuine);
    expect(codes(expired)).toEqual(["FRESHNESS_EXPIRED"]);
    expect(expired.body.nonce_consumed).toBe(false);
    expect((await h.verify(genuine)).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("a binding mismatch never consumes a nonce", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("binding-first");
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    const swapped = await h.verify({ ...genuine, request: { ...genuine.request, tool: "payments.refund" } });
    expect(codes(swapped)).toContain("BINDING_MISMATCH");
    expect((await h.verify(genuine)).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  // One presented field at a time differs from what the receipt was issued for.
  const changedField: [string, (v: any) => unknown][] = [
    ["agent_id", (v) => `${v}-impostor`],
    ["tool", () => "payments.refund"],
    ["params", (v) => ({ other: v ?? null })],
    ["timestamp", (v) => v + 1],
    ["trace_id", (v) => `${v}-elsewhere`],
  ];
  it.each(changedField)("a request whose %s differs is BINDING_MISMATCH, rejected, and its nonce is kept for the real request", async (field, change) => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor(`binding-${field}`);
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    const altered = { ...genuine.request, [field]: change(genuine.request[field]) };
    const res = await h.verify({ ...genuine, request: altered });
    expect(res.status).toBe(200);
    expect([res.body.decision, res.body.valid, res.body.nonce_consumed]).toEqual(["reject", false, false]);
    expect(codes(res).length).toBeGreaterThan(0);
    expect(new Set(codes(res))).toEqual(new Set(["BINDING_MISMATCH"]));
    expect((await h.verify(genuine)).body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });
});

describe("replay", () => {
  it("a nonce of 32 to 128 lowercase hex digits is a nonce (DESIGN: at least 32): a 64-digit one is accepted once, then a replay; 31 or 129 digits are MALFORMED_RECEIPT", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("long-nonce");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const withNonce = async (nonce: string) => {
      const b = await issuer.body();
      const { signature: _s, ...unsigned } = b.receipt;
      return { ...b, receipt: signReceipt({ ...unsigned, nonce } as UnsignedReceipt, issuer.id.seed) };
    };
    const long = await withNonce("ab".repeat(32));
    expect((await h.verify(long)).body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
    const again = await h.verify(long);
    expect([again.body.decision, codes(again)]).toEqual(["reject", ["REPLAY_DETECTED"]]);
    expect((await h.verify(await withNonce("c".repeat(128)))).body).toMatchObject({ decision: "accept", nonce_consumed: true });
    for (const nonce of ["d".repeat(31), "e".repeat(129), "F".repeat(32)]) {
      const res = await h.verify(await withNonce(nonce));
      expect([res.body.decision, codes(res), res.body.nonce_consumed], nonce).toEqual(["reject", ["MALFORMED_RECEIPT"], false]);
    }
  });

  it("50 concurrent enforce calls with one receipt: exactly one accept, 49 REPLAY_DETECTED", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("concurrent");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    const answers = await Promise.all(Array.from({ length: 50 }, () => h.verify(body)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.valid)).toHaveLength(1);
    expect(answers.filter((a) => a.body.nonce_consumed)).toHaveLength(1);
    const rejected = answers.filter((a) => !a.body.valid);
    expect(rejected).toHaveLength(49);
    expect(rejected.every((a) => JSON.stringify(codes(a)) === '["REPLAY_DETECTED"]')).toBe(true);
  });

  it("audit mode consumes nothing and reports a nonce already consumed", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("audit-mode");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    for (let i = 0; i < 2; i++) expect((await h.verify({ ...body, mode: "audit" })).body).toMatchObject({ valid: true, nonce_consumed: false, mode: "audit" });
    expect((await h.verify(body)).body.nonce_consumed).toBe(true);
    const after = await h.verify({ ...body, mode: "audit" });
    expect(codes(after)).toEqual(["REPLAY_DETECTED"]);
  });

  it("audit mode reports a consumed nonce only to a party the receipt is addressed to, and only for a receipt its issuer signed", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("audit-foreign");
    await h.pin(issuer.anchor);
    const NARROW = "audit-narrow-party-token-0123456789abcdef";
    expect([201, 409]).toContain((await h.admin("POST", "/v1/admin/relying-parties", { name: "audit-narrow-party", audiences: [AUDIENCE], token: NARROW })).status);
    const asNarrow = (body: unknown) => h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${NARROW}` }, body: JSON.stringify(body) });
    // Another party's receipt (addressed to SECOND_AUDIENCE, which the narrow party does not hold), consumed by its party.
    const theirs = await issuer.body({ audience: SECOND_AUDIENCE }, { audience: SECOND_AUDIENCE });
    expect((await h.verify(theirs)).body).toMatchObject({ valid: true, nonce_consumed: true });
    // The party it is addressed to still learns it was presented.
    expect(codes(await h.verify({ ...theirs, mode: "audit" }))).toEqual(["REPLAY_DETECTED"]);
    // Audited by the narrow party under its own audience: the receipt is not for it, and its replay state is not told.
    const mismatched = await asNarrow({ receipt: theirs.receipt, audience: AUDIENCE, mode: "audit" });
    expect(mismatched.status).toBe(200);
    expect(codes(mismatched)).toEqual(["AUDIENCE_MISMATCH"]);
    // Nor through a forged receipt carrying that nonce, addressed to the narrow party.
    const forged = await asNarrow({ receipt: { ...theirs.receipt, audience: AUDIENCE }, audience: AUDIENCE, mode: "audit" });
    expect(codes(forged)).toEqual(["SIGNATURE_INVALID"]);
    expect(forged.body).toMatchObject({ valid: false, decision: "audit", nonce_consumed: false });
  });

  it("audit mode judges freshness at `at` and runs without a request", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("audit-at");
    await h.pin(issuer.anchor);
    const { receipt } = await issuer.body();
    const then = await h.verify({ receipt, audience: AUDIENCE, mode: "audit", at: receipt.issued_at + 10 });
    expect(then.body).toMatchObject({ valid: true, checked_at: receipt.issued_at + 10 });
    const muchLater = await h.verify({ receipt, audience: AUDIENCE, mode: "audit", at: receipt.expires_at + 3600 });
    expect(codes(muchLater)).toEqual(["FRESHNESS_EXPIRED"]);
  });
});

describe("revocation", () => {
  it("revoking a key makes the next verification fail with ANCHOR_REVOKED, in any isolate, with no waiting", async () => {
    const h = harness(env, createExecutionContext());
    const otherIsolate = harness(env, createExecutionContext());
    const issuer = await issuerFor("revocation");
    await h.pin(issuer.anchor);
    expect((await otherIsolate.verify(await issuer.body())).body.valid).toBe(true);
    const revoked = await h.revoke(issuer.id.issuer, issuer.id.kid);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ issuer: issuer.id.issuer, kid: issuer.id.kid, revoked_at: TEST_NOW });
    const next = await otherIsolate.verify(await issuer.body());
    expect(codes(next)).toEqual(["ANCHOR_REVOKED"]);
    expect(next.body.nonce_consumed).toBe(false);
    const audit = await otherIsolate.verify({ ...(await issuer.body()), mode: "audit" });
    expect(codes(audit)).toEqual(["ANCHOR_REVOKED"]);
  });
});

describe("fail closed", () => {
  const failingLedger = (behaviour: "throw" | "hang" | "throw synchronously") => () => (): LedgerStub => {
    const fail = () => {
      if (behaviour === "throw synchronously") throw new Error("storage exploded at /srv/secret/path.ts:12");
      return behaviour === "throw" ? Promise.reject(new Error("storage exploded at /srv/secret/path.ts:12")) : new Promise<never>(() => {});
    };
    return { claim: fail, inspect: fail, revoke: fail, stats: fail, revocations: fail, forgetKeys: fail, resetSequence: fail, anchorState: fail, noteKeyUse: fail, keyUses: fail, withdraw: fail };
  };

  for (const behaviour of ["throw", "hang", "throw synchronously"] as const) {
    it(`a ledger that ${behaviour}s yields 503 VERIFIER_UNAVAILABLE, never an accept`, async () => {
      const fastEnv = { ...env, DEPENDENCY_TIMEOUT_MS: "100" } as Env;
      const good = harness(env, createExecutionContext());
      const issuer = await issuerFor(`ledger-${behaviour.replace(" ", "-")}`);
      await good.pin(issuer.anchor);
      const h = harness(fastEnv, createExecutionContext(), { ledgerStub: failingLedger(behaviour) });
      for (const mode of ["enforce", "audit"]) {
        const res = await h.verify({ ...(await issuer.body()), mode });
        expect(res.status).toBe(503);
        expect(res.body).toMatchObject({ valid: false, decision: mode === "audit" ? "audit" : "reject", error: { code: "VERIFIER_UNAVAILABLE" } });
        expect(codes(res)).toEqual(["VERIFIER_UNAVAILABLE"]);
        expect(res.text).not.toMatch(/secret|\.ts|\bat\s/);
      }
    });
  }

  it("an anchor store that fails yields 503 VERIFIER_UNAVAILABLE", async () => {
    const failAnchors = (key: string, type: "json") => (key.startsWith("anchor:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.get(key, type));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: failAnchors, put: (k: string, v: string) => env.ANCHORS.put(k, v) } } as unknown as Env;
    const issuer = await issuerFor("kv-down");
    const res = await harness(brokenKv, createExecutionContext()).verify(await issuer.body());
    expect(res.status).toBe(503);
    expect(codes(res)).toEqual(["VERIFIER_UNAVAILABLE"]);
  });

  it("a relying-party store that fails yields 503 VERIFIER_UNAVAILABLE, not 500: the token lookup is a dependency too", async () => {
    const token = "kv-down-party-token-0123456789abcdef";
    const registered = await harness(env, createExecutionContext()).call("/v1/admin/relying-parties", {
      method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` }, body: JSON.stringify({ name: "kv-down-party", audiences: [AUDIENCE], token }),
    });
    expect(registered.status).toBe(201);
    const failParties = (key: string, type: "json") => (key.startsWith("rp-token:") || key.startsWith("rp:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.get(key, type));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: failParties, put: (k: string, v: string) => env.ANCHORS.put(k, v) } } as unknown as Env;
    const issuer = await issuerFor("rp-kv-down");
    const broken = harness(brokenKv, createExecutionContext());
    const res = await broken.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(await issuer.body()) });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false, error: { code: "VERIFIER_UNAVAILABLE" } });
    // And off the decision routes: an anchor read that fails is 503 too.
    const failAll = { ...env, ANCHORS: { ...env.ANCHORS, get: () => Promise.reject(new Error("kv down")) } } as unknown as Env;
    const logged = vi.spyOn(console, "error");
    try {
      const unreadable = await harness(failAll, createExecutionContext()).call(`/v1/issuers/${encodeURIComponent(issuer.id.issuer)}`);
      expect([unreadable.status, unreadable.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
      // The log line names the store and carries its own error, so an outage and a fault can be told apart.
      const lines = logged.mock.calls.map(([line]) => JSON.parse(String(line)));
      expect(lines).toContainEqual(expect.objectContaining({ event: "request_failed", error: "VerifierUnavailable: anchor store unavailable", cause: "Error: kv down" }));
    } finally {
      logged.mockRestore();
    }
  });

  it("a relying-party store that fails yields 503 VERIFIER_UNAVAILABLE, not 500 INTERNAL_ERROR", async () => {
    const issuer = await issuerFor("rp-store-down");
    const good = harness(env, createExecutionContext());
    await good.pin(issuer.anchor);
    // The test relying party registered first (an audit call consumes nothing).
    expect((await good.verify({ ...(await issuer.body()), mode: "audit" })).status).toBe(200);
    const failTokens = (key: string, type: "json") => (key.startsWith("rp-token:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.get(key, type));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: failTokens, put: (k: string, v: string) => env.ANCHORS.put(k, v) } } as unknown as Env;
    for (const mode of ["enforce", "audit"]) {
      const res = await harness(brokenKv, createExecutionContext()).verify({ ...(await issuer.body()), mode });
      // The token is looked up before the body is read: no mode to tell yet, refused as an enforce call.
      expect([res.status, res.body.error.code, res.body.decision]).toEqual([503, "VERIFIER_UNAVAILABLE", "reject"]);
    }
    expect((await good.verify(await issuer.body())).body).toMatchObject({ decision: "accept", nonce_consumed: true });
  });

  it("a level: 0 call whose anchor store fails, or holds a record no longer of its schema, yields 503 VERIFIER_UNAVAILABLE", async () => {
    const issuer = await issuerFor("level0-kv-down");
    await harness(env, createExecutionContext()).pin({ ...issuer.anchor, shared_secret: { secret: "LEGACY_HMAC_KEY" } });
    const failAnchors = (key: string, type: "json") => (key.startsWith("anchor:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.get(key, type));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: failAnchors, put: (k: string, v: string) => env.ANCHORS.put(k, v) } } as unknown as Env;
    const body = { ...(await issuer.body()), level: 0 };
    const down = await harness(brokenKv, createExecutionContext()).verify(body);
    expect([down.status, down.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    await env.ANCHORS.put(`anchor:${issuer.id.issuer}`, JSON.stringify({ issuer: issuer.id.issuer, keys: "everything" }));
    const corrupt = await harness(env, createExecutionContext()).verify(body);
    expect([corrupt.status, corrupt.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
  });

  it("a failure's detail that quotes the receipt is cut at 1,024 characters (an unknown field of 200,000 was quoted twice, whole)", async () => {
    const issuer = await issuerFor("long-unknown-field");
    const h = harness(env, createExecutionContext());
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    const res = await h.verify({ ...genuine, receipt: { ...genuine.receipt, ["k".repeat(200_000)]: 1 } });
    expect([res.status, codes(res)]).toEqual([400, ["MALFORMED_RECEIPT"]]);
    expect(res.body.failures[0].detail).toMatch(/^unknown field "kkk+… \(\d+ more characters\)$/);
    expect(res.body.error.detail).toBe(res.body.failures[0].detail);
  });

  it("a level: 0 call whose v1.3 receipt names an issuer too long to be pinned is refused as malformed, not 503 (no anchor read)", async () => {
    const issuer = await issuerFor("level0-long-issuer");
    const h = harness(env, createExecutionContext());
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    // Past KV's 512-byte key limit: the read itself would fail, and a retry could never succeed.
    for (const length of [300, 600]) {
      const res = await h.verify({ ...genuine, receipt: { ...genuine.receipt, issuer: `https://${"a".repeat(length)}` }, level: 0 });
      expect([res.status, res.body.decision, codes(res)]).toEqual([400, "reject", ["MALFORMED_RECEIPT"]]);
      expect(res.body.nonce_consumed).toBe(false);
    }
  });

  it("a stored anchor that no longer matches its schema fails closed", async () => {
    const issuer = await issuerFor("corrupt-anchor");
    await env.ANCHORS.put(`anchor:${issuer.id.issuer}`, JSON.stringify({ issuer: issuer.id.issuer, keys: "everything" }));
    const res = await harness(env, createExecutionContext()).verify(await issuer.body());
    expect(res.status).toBe(503);
    expect(codes(res)).toEqual(["VERIFIER_UNAVAILABLE"]);
  });
});

describe("malformed calls", () => {
  const cases: [string, (b: Record<string, any>) => unknown, number, string][] = [
    ["an unknown top-level field", (b) => ({ ...b, extra: 1 }), 400, "MALFORMED_REQUEST"],
    ["a missing receipt", ({ receipt: _r, ...b }) => b, 400, "MALFORMED_REQUEST"],
    ["an audience this deployment does not serve", (b) => ({ ...b, audience: "https://elsewhere.example" }), 403, "AUDIENCE_NOT_ALLOWED"],
    ["at in enforce mode", (b) => ({ ...b, at: TEST_NOW }), 400, "MALFORMED_REQUEST"],
    ["enforce mode without a request", ({ request: _q, ...b }) => b, 400, "MALFORMED_REQUEST"],
    ["an unknown mode", (b) => ({ ...b, mode: "lenient" }), 400, "MALFORMED_REQUEST"],
    ["a request with an extra field", (b) => ({ ...b, request: { ...b.request, extra: true } }), 400, "MALFORMED_REQUEST"],
    ["a reported outcome other than indeterminate/unknown", (b) => ({ ...b, outcome_status: "confirmed" }), 400, "MALFORMED_REQUEST"],
    ["a body that is not an object", () => [1, 2], 400, "MALFORMED_REQUEST"],
    ["a top-level duplicate key", (b) => `{"audience":"x",${JSON.stringify(b).slice(1)}`, 400, "MALFORMED_REQUEST"],
    ["a receipt that is not an object", (b) => ({ ...b, receipt: "a receipt" }), 400, "MALFORMED_RECEIPT"],
    ["a body over 256 KiB", (b) => ({ ...b, request: { ...b.request, params: { blob: "x".repeat(300_000) } } }), 413, "REQUEST_TOO_LARGE"],
    ["invalid JSON", () => "{", 400, "MALFORMED_REQUEST"],
  ];
  for (const [name, mutate, status, code] of cases) {
    it(`${name} is ${status} ${code}, in the decision's shape`, async () => {
      const issuer = await issuerFor("malformed-calls");
      const res = await harness(env, createExecutionContext()).verify(mutate(await issuer.body()));
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false, enforcement: { action: "block" } });
      expect(codes(res)[0]).toBe(code);
      // Judged on the service's clock, as every decision is.
      expect(res.body.checked_at).toBe(TEST_NOW);
    });
  }
});

describe("the nesting limit (32 levels, counted from the body itself)", () => {
  /** `levels` arrays one inside the other around a 0. */
  const nested = (levels: number): unknown => (levels === 0 ? 0 : [nested(levels - 1)]);
  const tooDeep = (res: { body: any }) => /^too_deep/.test(res.body.error?.detail ?? "");

  it("too deep inside the receipt is 400 MALFORMED_RECEIPT; one level less is refused only for the unknown field", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("deep-receipt");
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    // body (1) > receipt (2) > 31 arrays (3..33)
    const deep = await h.verify({ ...genuine, receipt: { ...genuine.receipt, deep: nested(31) } });
    expect([deep.status, deep.body.decision, codes(deep), tooDeep(deep)]).toEqual([400, "reject", ["MALFORMED_RECEIPT"], true]);
    const edge = await h.verify({ ...genuine, receipt: { ...genuine.receipt, deep: nested(30) } });
    expect([edge.status, codes(edge), tooDeep(edge)]).toEqual([400, ["MALFORMED_RECEIPT"], false]);
    expect((await h.verify(genuine)).body).toMatchObject({ decision: "accept", nonce_consumed: true });
  });

  it("too deep outside the receipt (in request.params) is 400 MALFORMED_REQUEST; one level less is parsed and judged", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("deep-params");
    await h.pin(issuer.anchor);
    const genuine = await issuer.body();
    // body (1) > request (2) > 31 arrays (3..33)
    const deep = await h.verify({ ...genuine, request: { ...genuine.request, params: nested(31) } });
    expect([deep.status, deep.body.decision, codes(deep), tooDeep(deep)]).toEqual([400, "reject", ["MALFORMED_REQUEST"], true]);
    // At 32 levels the call is read: its params are not the receipt's, so the answer is a binding mismatch.
    const edge = await h.verify({ ...genuine, request: { ...genuine.request, params: nested(30) } });
    expect([edge.status, edge.body.decision, new Set(codes(edge))]).toEqual([200, "reject", new Set(["BINDING_MISMATCH"])]);
    expect((await h.verify(genuine)).body).toMatchObject({ decision: "accept", nonce_consumed: true });
  });
});

describe("malformed audit calls are refused in audit mode's shape", () => {
  const audit = (b: Record<string, any>) => ({ ...b, mode: "audit", request: undefined });
  const cases: [string, (b: Record<string, any>) => unknown, number, string][] = [
    ["an unknown top-level field", (b) => ({ ...audit(b), extra: 1 }), 400, "MALFORMED_REQUEST"],
    ["a missing receipt", (b) => ({ ...audit(b), receipt: undefined }), 400, "MALFORMED_REQUEST"],
    ["at that is not a number", (b) => ({ ...audit(b), at: "x" }), 400, "MALFORMED_REQUEST"],
    ["a top-level duplicate key", (b) => `{"audience":"x",${JSON.stringify(audit(b)).slice(1)}`, 400, "MALFORMED_REQUEST"],
    ["a receipt that is not an object", (b) => ({ ...audit(b), receipt: "a receipt" }), 400, "MALFORMED_RECEIPT"],
    ["a receipt with a duplicate key", (b) => JSON.stringify(audit(b)).replace('"nonce":', '"nonce":"0","nonce":'), 400, "MALFORMED_RECEIPT"],
  ];
  for (const [name, mutate, status, code] of cases) {
    it(`${name} is ${status} ${code} with decision audit`, async () => {
      const issuer = await issuerFor("malformed-audit-calls");
      const res = await harness(env, createExecutionContext()).verify(mutate(await issuer.body()));
      expect(res.status).toBe(status);
      expect(res.body).toMatchObject({ valid: false, decision: "audit", mode: "audit", nonce_consumed: false });
      expect(codes(res)[0]).toBe(code);
    });
  }

  it("a body that is not JSON at all has no mode to tell: it is refused as an enforce call would be", async () => {
    const res = await harness(env, createExecutionContext()).verify('{"mode":"audit",');
    expect(res.body).toMatchObject({ valid: false, decision: "reject", mode: "enforce" });
  });
});

describe("the ledger's own clock", () => {
  it("a receipt fresh by the verifier's clock but past its retention by the ledger's is refused FRESHNESS_EXPIRED, nothing consumed", async () => {
    const realNow = Math.floor(Date.now() / 1000);
    // The verifier's clock runs 400 s behind the ledger's: by it, the receipt is fresh.
    const h = harness(env, createExecutionContext(), { now: () => realNow - 400 });
    const issuer = await issuerFor("ledger-clock-ahead");
    await h.pin(issuer.anchor);
    const body = await issuer.body({ issuedAt: realNow - 405 });
    const res = await h.verify(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ valid: false, decision: "reject", nonce_consumed: false });
    expect(res.body.failures).toEqual([expect.objectContaining({ code: "FRESHNESS_EXPIRED", detail: expect.stringMatching(/ledger's clock/) })]);
  });
});

describe("a percent-encoded path to a decision route", () => {
  it("is refused in the decision's shape like the plain path", async () => {
    const h = harness(env, createExecutionContext());
    for (const path of ["/v1/receipts/verify", "/v1/receipts/%76erify", "/v1/envelopes/%76erify"]) {
      const res = await h.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: "" }, body: "{}" });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ valid: false, decision: "reject", error: { code: "UNAUTHORIZED" } });
    }
  });
});

describe("Idempotency-Key", () => {
  it("is ignored in audit mode whatever its form, and refused malformed in enforce mode", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("idempotency-form");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    const post = (b: unknown) => h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", "idempotency-key": "has space" }, body: JSON.stringify(b) });
    const audited = await post({ ...body, mode: "audit", request: undefined });
    expect([audited.status, audited.body.decision]).toEqual([200, "audit"]);
    const enforced = await post(body);
    expect([enforced.status, codes(enforced)[0]]).toEqual([400, "MALFORMED_REQUEST"]);
    expect((await h.verify(body)).body.decision).toBe("accept");
  });
});

describe("bodies without a declared length", () => {
  it("a streamed body over 256 KiB is refused with 413 REQUEST_TOO_LARGE; past the cap it is read out only up to a bound, then cancelled", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(1024 * 1024));
    // Far more than the cap and the bound on what is read out after it: the stream must be cancelled, not drained.
    const total = Math.ceil((256 * 1024 + DISCARD_LIMIT) / chunk.length) + 16;
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < total) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await harness(env, createExecutionContext()).call("/v1/receipts/verify", { method: "POST", body, headers: { "content-type": "application/json" } });
    expect(res.status).toBe(413);
    expect(codes(res)).toEqual(["REQUEST_TOO_LARGE"]);
    expect(sent * chunk.length).toBeLessThanOrEqual(256 * 1024 + DISCARD_LIMIT + 4 * chunk.length);
    expect(sent).toBeLessThan(total);
  });

  it("a small streamed body is read and judged", async () => {
    const issuer = await issuerFor("streamed-body");
    const h = harness(env, createExecutionContext());
    await h.pin(issuer.anchor);
    const bytes = new TextEncoder().encode(JSON.stringify(await issuer.body()));
    const body = new ReadableStream<Uint8Array>({ start(controller) { controller.enqueue(bytes.slice(0, 100)); controller.enqueue(bytes.slice(100)); controller.close(); } });
    const res = await h.call("/v1/receipts/verify", { method: "POST", body, headers: { "content-type": "application/json" } });
    expect(res.body).toMatchObject({ valid: true, nonce_consumed: true });
  });
});

describe("outcome and counters", () => {
  it("counts decisions by code and outcome label in DecisionStats, batched, never in the issuer's ledger", async () => {
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { decisionFlush: { everyMs: 60_000, everyDecisions: 5 } });
    const issuer = await issuerFor("counters");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    await h.verify(body);
    await h.verify(body);
    await h.verify({ ...(await issuer.body()), audience: SECOND_AUDIENCE });
    await h.verify(await issuer.body({}, { outcome_status: "unknown" }));
    await waitOnExecutionContext(ctx);
    const stats = () => h.call("/v1/admin/stats", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect((await stats()).body.totals[issuer.id.issuer]).toBeUndefined();
    await h.verify(await issuer.body());
    await waitOnExecutionContext(ctx);
    const after = await stats();
    expect(after.status).toBe(200);
    // The allow reported with an unknown outcome is valid but answers "defer": DEFERRED, not ACCEPTED.
    expect(after.body.totals[issuer.id.issuer]).toEqual({ ACCEPTED: 2, DEFERRED: 1, REPLAY_DETECTED: 1, AUDIENCE_MISMATCH: 1, OUTCOME_INDETERMINATE: 1 });
    const ledgerStats = await env.ISSUER_LEDGER.get(env.ISSUER_LEDGER.idFromName(issuer.id.issuer)).stats();
    expect(ledgerStats).not.toHaveProperty("counters");
    expect(ledgerStats.nonces).toBe(3);
  });

  it("the deployed Worker answers through its own fetch handler", async () => {
    const res = await (await import("cloudflare:test")).SELF.fetch("https://countersign.test/healthz");
    expect(res.status).toBe(200);
    const nf = await (await import("cloudflare:test")).SELF.fetch("https://countersign.test/v1/nothing");
    expect(nf.status).toBe(404);
    expect(await nf.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
  });
});
