import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../worker/protocol/digest.js";
import { fromBase64Url, fromHex, toBase64Url } from "../../worker/protocol/encoding.js";
import { durableLedgerStub } from "../../worker/stores.js";
import { ADMIN_TOKEN, harness, INTAKE_TOKEN, issuerFor, RP_TOKEN, TEST_NOW } from "../support/app-harness.js";

const h = () => harness(env, createExecutionContext());
const keyOf = (hex: string) => toBase64Url(fromHex(hex)!);

describe("admin authentication", () => {
  it("refuses a missing or wrong bearer token with 401 UNAUTHORIZED", async () => {
    const issuer = await issuerFor("admin-auth");
    for (const authorization of [undefined, "Bearer wrong", "Basic dGVzdA==", "Bearer test-admin-tokeN", "test-admin-token"]) {
      const res = await h().call("/v1/admin/anchors", {
        method: "PUT",
        headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
        body: JSON.stringify(issuer.anchor),
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: { code: "UNAUTHORIZED", detail: expect.any(String) } });
    }
  });
});

describe("the Bearer scheme is matched without case (RFC 9110 §11.1)", () => {
  it("admin, relying-party and intake tokens are taken under bearer, BEARER or Bearer; the token itself is still exact", async () => {
    const issuer = await issuerFor("admin-auth-case");
    // The harness registers the test relying party on its first relying-party call.
    await h().call("/v1/journal/load", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ record_id: "0".repeat(32) }) });
    const pin = (authorization: string) => h().call("/v1/admin/anchors", { method: "PUT", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(issuer.anchor) });
    const party = (authorization: string) => h().call("/v1/journal/load", { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify({ record_id: "0".repeat(32) }) });
    const start = (authorization: string) => h().call("/v1/receipts/00000000000000ff/start", { method: "POST", headers: { "content-type": "application/json", authorization }, body: "{}" });
    const evidence = (authorization: string) => h().call("/v1/evidence/00000000000000ff", { headers: { authorization } });
    for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
      expect((await pin(`${scheme} ${ADMIN_TOKEN}`)).status, scheme).toBe(200);
      expect((await party(`${scheme} ${RP_TOKEN}`)).body, scheme).toEqual({ kind: "not-found" });
      expect((await start(`${scheme}  ${INTAKE_TOKEN}`)).body.error.code, scheme).toBe("NOT_FOUND");
      expect((await evidence(`${scheme} ${ADMIN_TOKEN}`)).body.error.code, scheme).toBe("NOT_FOUND");
    }
    for (const authorization of [`bearer ${ADMIN_TOKEN.toUpperCase()}`, `bearer${ADMIN_TOKEN}`, `bearerx ${ADMIN_TOKEN}`, `basic ${ADMIN_TOKEN}`, "bearer "]) {
      const res = await pin(authorization);
      expect(res.status, authorization).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
    }
    expect((await party(`bearer ${RP_TOKEN.toUpperCase()}`)).status).toBe(401);
    expect((await start(`BEARER ${ADMIN_TOKEN}`)).status).toBe(401);
  });
});

describe("pinning anchors", () => {
  it("answers the kids with their fingerprints, SHA-256 of the raw key", async () => {
    const issuer = await issuerFor("pin-ok");
    const res = await h().pin(issuer.anchor);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ issuer: issuer.id.issuer, keys: [{ kid: "k1", fingerprint: await sha256Hex(fromBase64Url(issuer.id.publicKey)!) }] });
  });

  it.each([
    ["the identity point", "0100000000000000000000000000000000000000000000000000000000000000"],
    ["a point of order 8", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"],
    ["a point of order 2 (y = -1)", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"],
  ])("refuses %s as a small-order key with 400 ANCHOR_KEY_REJECTED", async (_name, hex) => {
    const issuer = await issuerFor("pin-small-order");
    const res = await h().pin({ ...issuer.anchor, keys: [{ kid: "bad", alg: "Ed25519", public_key: keyOf(hex) }] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("ANCHOR_KEY_REJECTED");
    expect(res.body.error.detail).toMatch(/small-order/);
  });

  it("refuses a non-canonical point encoding and a non-canonical base64url with 400 ANCHOR_KEY_REJECTED", async () => {
    const issuer = await issuerFor("pin-noncanonical");
    const nonCanonicalY = keyOf("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
    const good = issuer.id.publicKey;
    const nonCanonicalB64 = good.slice(0, 42) + String.fromCharCode(good.charCodeAt(42) + 1);
    for (const public_key of [nonCanonicalY, nonCanonicalB64]) {
      const res = await h().pin({ ...issuer.anchor, keys: [{ kid: "k9", alg: "Ed25519", public_key }] });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("ANCHOR_KEY_REJECTED");
    }
  });

  it.each([
    ["an unknown field", (a: any) => ({ ...a, extra: 1 })],
    ["no keys", (a: any) => ({ ...a, keys: [] })],
    ["an http issuer", (a: any) => ({ ...a, issuer: "http://issuer.example" })],
    ["another algorithm", (a: any) => ({ ...a, keys: [{ ...a.keys[0], alg: "ES256" }] })],
    ["a key of the wrong length", (a: any) => ({ ...a, keys: [{ ...a.keys[0], public_key: "AAAA" }] })],
    ["a fingerprint that is not the key's", (a: any) => ({ ...a, keys: [{ ...a.keys[0], fingerprint: "0".repeat(64) }] })],
    ["a kid listed twice", (a: any) => ({ ...a, keys: [a.keys[0], a.keys[0]] })],
    ["not_after before not_before", (a: any) => ({ ...a, keys: [{ ...a.keys[0], not_before: 10, not_after: 5 }] })],
    ["an org_id that is not a URI", (a: any) => ({ ...a, org_id: "org-7" })],
    ["an issuer no receipt could name (not a URI)", (a: any) => ({ ...a, issuer: "https://[not-a-uri" })],
    ["an issuer with a control character", (a: any) => ({ ...a, issuer: "https://pin-invalid.example/\u0000" })],
    ["an org_id that is not a URI with a host", (a: any) => ({ ...a, org_id: "https://[org" })],
    ["an issuer with an empty authority (a URL parser reads a host into it)", (a: any) => ({ ...a, issuer: "https:///pin-invalid.example" })],
    ["an issuer with a backslash", (a: any) => ({ ...a, issuer: "https://\\pin-invalid.example" })],
  ])("refuses %s with 400 ANCHOR_INVALID", async (_name, mutate) => {
    const issuer = await issuerFor("pin-invalid");
    const res = await h().pin(mutate(issuer.anchor));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("ANCHOR_INVALID");
  });

  it("refuses a strictly malformed body with 400 MALFORMED_REQUEST", async () => {
    const res = await h().pin('{"issuer":"https://a.example","issuer":"https://b.example","keys":[]}');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
  });
});

describe("revocation and the public anchor", () => {
  it("an admin change reads the anchor as KV holds it, not as this isolate cached it: a key pinned through another isolate can be revoked at once", async () => {
    const issuer = await issuerFor("fresh-anchor");
    const here = h();
    expect((await here.pin(issuer.anchor)).status).toBe(200); // this isolate now caches the record with k1 alone
    const k2 = { kid: "k2", alg: "Ed25519", public_key: (await issuerFor("fresh-anchor-k2")).id.publicKey };
    expect((await h().pin({ ...issuer.anchor, keys: [...issuer.anchor.keys, k2] })).status).toBe(200); // another isolate adds k2
    const revoked = await here.revoke(issuer.id.issuer, "k2");
    expect([revoked.status, revoked.body.kid]).toEqual([200, "k2"]);
  });

  it("shows the pinned anchor, then the revoked key; a revoked key cannot be pinned again", async () => {
    const issuer = await issuerFor("public-anchor");
    const k2 = { kid: "k2", alg: "Ed25519", public_key: (await issuerFor("public-anchor-k2")).id.publicKey, not_before: TEST_NOW - 100, not_after: TEST_NOW + 100 };
    await h().pin({ ...issuer.anchor, org_id: "https://org-7.example", keys: [...issuer.anchor.keys, k2] });
    const path = `/v1/issuers/${encodeURIComponent(issuer.id.issuer)}`;
    const before = await h().call(path);
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ issuer: issuer.id.issuer, org_id: "https://org-7.example", revoked: [] });
    expect(before.body.keys.map((k: any) => [k.kid, k.revoked, k.short_fingerprint.length, k.not_before])).toEqual([["k1", false, 16, null], ["k2", false, 16, TEST_NOW - 100]]);
    expect((await h().revoke(issuer.id.issuer, "k2")).status).toBe(200);
    const after = await h().call(path);
    const k2Fingerprint = before.body.keys[1].fingerprint;
    expect(after.body.revoked).toEqual([{ fingerprint: k2Fingerprint, kid: "k2", revoked_at: TEST_NOW }]);
    expect(after.body.keys.find((k: any) => k.kid === "k2").revoked).toBe(true);
    const again = await h().pin({ ...issuer.anchor, keys: [...issuer.anchor.keys, k2] });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("ANCHOR_KEY_REVOKED");
  });

  it("an issuer holding a % is read back under its once-encoded name, never as another issuer", async () => {
    // `%41` inside an issuer is three characters of that issuer; decoding the path twice read it as `A`.
    const named = async (issuer: string, test: string) => {
      const other = await issuerFor(test);
      await h().pin({ ...other.anchor, issuer });
      return other.id.publicKey;
    };
    const escaped = "https://percent-issuer.example/a%41";
    const plain = "https://percent-issuer.example/aA";
    const bare = "https://percent-issuer.example/100%";
    const keys: Record<string, string> = { [escaped]: await named(escaped, "percent-issuer-escaped"), [plain]: await named(plain, "percent-issuer-plain"), [bare]: await named(bare, "percent-issuer-bare") };
    for (const issuer of [escaped, plain, bare]) {
      const res = await h().call(`/v1/issuers/${encodeURIComponent(issuer)}`);
      expect([res.status, res.body.issuer, res.body.keys?.[0]?.public_key], issuer).toEqual([200, issuer, keys[issuer]]);
      const manifest = await h().call(`/v1/verifiers/${encodeURIComponent(issuer)}/manifest`);
      expect([manifest.status, manifest.body.error.detail], issuer).toEqual([404, `no manifest is pinned for ${issuer}`]);
    }
  });

  it("a pin the global revocation record refuses addresses no ledger of the new issuer", async () => {
    const issuer = await issuerFor("revoked-elsewhere");
    await h().pin(issuer.anchor);
    expect((await h().revoke(issuer.id.issuer, "k1")).status).toBe(200);
    const addressed: string[] = [];
    const watching = harness(env, createExecutionContext(), { ledgerStub: (e) => (name) => (addressed.push(name), durableLedgerStub(e)(name)) });
    const elsewhere = "https://revoked-elsewhere-new.example";
    const res = await watching.pin({ ...issuer.anchor, issuer: elsewhere });
    expect([res.status, res.body.error.code]).toEqual([409, "ANCHOR_KEY_REVOKED"]);
    expect(addressed.filter((n) => n.includes(elsewhere))).toEqual([]);
  });

  it("an admin change whose issuer ledger or anchor store fails is 503 VERIFIER_UNAVAILABLE, not 500 INTERNAL_ERROR", async () => {
    const issuer = await issuerFor("admin-dependency-down");
    await h().pin(issuer.anchor);
    const failing = () => Promise.reject(new Error("storage exploded"));
    const brokenLedger = harness(env, createExecutionContext(), {
      ledgerStub: (e) => (name) => ({ ...durableLedgerStub(e)(name), revoke: failing, revocations: failing, resetSequence: failing, forgetKeys: failing }),
    });
    const revoked = await brokenLedger.revoke(issuer.id.issuer, "k1");
    expect([revoked.status, revoked.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    const reset = await brokenLedger.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: issuer.id.issuer, kid: "k1", reason: "test" });
    expect([reset.status, reset.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    const failAnchors = (key: string, type: "json") => (key.startsWith("anchor:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.get(key, type));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: failAnchors } } as unknown as typeof env;
    const pinned = await harness(brokenKv, createExecutionContext()).pin(issuer.anchor);
    expect([pinned.status, pinned.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    // Nothing was revoked: the key still verifies.
    expect((await h().verify(await issuer.body())).body).toMatchObject({ decision: "accept" });
  });

  it("answers 404 NOT_FOUND for an unknown issuer or kid", async () => {
    const issuer = await issuerFor("revoke-unknown");
    expect((await h().revoke(issuer.id.issuer, "k1")).body.error.code).toBe("NOT_FOUND");
    await h().pin(issuer.anchor);
    const res = await h().revoke(issuer.id.issuer, "nope");
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("NOT_FOUND");
    expect((await h().call(`/v1/issuers/${encodeURIComponent("https://nobody.example")}`)).status).toBe(404);
  });

  it("refuses a revocation body that is not {issuer, kid}", async () => {
    const res = await h().call("/v1/admin/anchors/revoke", {
      method: "POST",
      headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
      body: JSON.stringify({ issuer: "https://a.example" }),
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
  });
});
