/**
 * Manifests, configuration history, routing and staleness through the Worker, in workerd with
 * real KV: the served manifest verifies under the key /.well-known/ccs-issuer publishes, pollers
 * get 304, pinning refuses what does not verify, resolve answers each outcome, and receipts bound
 * to an earlier manifest are answered MANIFEST_STALE.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../worker/env.js";
import { jcs, prefixedDigest } from "../../worker/protocol/digest.js";
import { webCryptoVerifier } from "../../worker/protocol/ed25519.js";
import { fromBase64Url } from "../../worker/protocol/encoding.js";
import { signReceipt, unsignedReceipt } from "../../worker/protocol/issue.js";
import { buildChain } from "../../worker/protocol/chain.js";
import { canonicalConfig, configHash } from "../../worker/protocol/issuing/config.js";
import { manifestContent, manifestHash, MAX_MANIFEST_WINDOW, verifyManifest } from "../../worker/protocol/manifest/manifest.js";
import { anchorFor, identity, labelHex } from "../../vectors/ccs/factory.js";
import { AUDIENCE, harness, TEST_NOW, type Harness } from "../support/app-harness.js";
import { manifestOf } from "../support/manifests.js";

const ctx = () => createExecutionContext();
const WINDOW = { published_at: TEST_NOW - 3600, expires_at: TEST_NOW + 86_400 };
let h: Harness;
let traces = 0;
const command = (extra: Record<string, unknown> = {}) => ({
  intake_version: "1.3", agent_id: "manifest-agent", tool: "search_web", params: { query: "tides" }, timestamp: TEST_NOW - 1, trace_id: (0xa000 + ++traces).toString(16).padStart(16, "0"), ...extra,
});

beforeAll(async () => {
  h = harness(env, ctx());
  expect((await h.pin((await h.call("/.well-known/ccs-issuer")).body)).status).toBe(200);
});

describe("GET /.well-known/ccs-manifest", () => {
  it("serves a manifest that verifies under the key /.well-known/ccs-issuer publishes, declaring what countersign evaluates", async () => {
    const doc = (await h.call("/.well-known/ccs-issuer")).body;
    const r = await h.call("/.well-known/ccs-manifest");
    expect(r.status).toBe(200);
    expect(r.text).toBe(jcs(r.body));
    const keys = doc.keys.map((k: any) => ({ ...k, not_before: null, not_after: null, raw: fromBase64Url(k.public_key)! }));
    const check = await verifyManifest(r.body, { keys, now: TEST_NOW, skew: 30, verifier: webCryptoVerifier() });
    expect(check).toMatchObject({ ok: true, kid: "test-signing-1" });
    expect(r.body).toMatchObject({ manifest_version: "1", verifier_id: "https://countersign.test", signing_key_fingerprint: doc.keys[0].fingerprint, challenge_policy: { base_duration: 60, deadline_multiplier: 5, max_deadline: 600 } });
    expect(r.body.profiles.map((p: any) => p.id)).toEqual(["ccs/1.3/receipt-verification", "ccs/1.3/evidence-envelope", "ccs/1.3/evidence-chain", "ccs/1.3/intake", "ec-agent/receipt", "ec-agent/bundle-replay"]);
    expect(r.body.published_at).toBeLessThanOrEqual(TEST_NOW);
    expect(r.body.expires_at).toBeGreaterThan(TEST_NOW);
  });

  it("has a strong ETag and Cache-Control, and answers If-None-Match with 304 and no body", async () => {
    const first = await h.call("/.well-known/ccs-manifest");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(first.headers.get("cache-control")).toBe("public, max-age=300");
    expect((await h.call("/.well-known/ccs-manifest")).headers.get("etag")).toBe(etag);
    const again = await h.call("/.well-known/ccs-manifest", { headers: { "if-none-match": `"other", ${etag}` } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    expect((await h.call("/.well-known/ccs-manifest", { headers: { "if-none-match": '"other"' } })).status).toBe(200);
  });
});

describe("configuration: manifest_hash and history", () => {
  it("binds the manifest's content into the configuration, and a manifest change changes config_hash", async () => {
    const cfg = (await h.call("/v1/config")).body;
    const served = (await h.call("/.well-known/ccs-manifest")).body;
    expect(cfg.config.manifest_hash).toBe(await manifestHash(served));
    expect(cfg.manifest).toEqual(manifestContent(served));
    const narrow = harness({ ...env, PROFILES: "ccs/1.3/receipt-verification" } as Env, ctx());
    const other = (await narrow.call("/v1/config")).body;
    expect(other.config.manifest_hash).not.toBe(cfg.config.manifest_hash);
    expect(other.config_hash).not.toBe(cfg.config_hash);
    const policy = harness({ ...env, CHALLENGE_MAX_DEADLINE: "120" } as Env, ctx());
    expect((await policy.call("/v1/config")).body.config_hash).not.toBe(cfg.config_hash);
  });

  it("answers any configuration ever issued under, after the configuration changed", async () => {
    const old = harness({ ...env, PROFILES: "ccs/1.3/intake,ec-agent/receipt" } as Env, ctx());
    const issued = await old.intake(command());
    expect(issued.status).toBe(200);
    const hash = issued.body.receipt.config_hash;
    const later = harness(env, ctx());
    expect((await later.call("/v1/config")).body.config_hash).not.toBe(hash);
    const back = await later.call(`/v1/config/${encodeURIComponent(hash)}`);
    expect(back.status).toBe(200);
    expect(back.body.config_hash).toBe(hash);
    expect(await prefixedDigest(jcs(back.body.config))).toBe(hash);
    expect(await manifestHash(back.body.manifest)).toBe(back.body.config.manifest_hash);
    expect(back.body.manifest.profiles.map((p: any) => p.id)).toEqual(["ccs/1.3/intake", "ec-agent/receipt"]);
    expect((await later.call("/v1/config/not-a-hash")).status).toBe(400);
    expect((await later.call(`/v1/config/sha256:${"0".repeat(64)}`)).status).toBe(404);
  });
});

async function otherVerifier(label: string) {
  const id = await identity(label, `https://${label}.example`, "v1");
  expect((await h.pin(anchorFor(id))).status).toBe(200);
  return id;
}

const pinManifest = (body: unknown) => h.admin("PUT", "/v1/admin/manifests", body);

describe("PUT /v1/admin/manifests and GET /v1/verifiers/{id}/manifest", () => {
  it("refuses a bad signature, an expired manifest, an unknown fingerprint and an unpinned issuer", async () => {
    const id = await otherVerifier("refused-verifier");
    const m = await manifestOf(id, [{ id: "p/one", comparison_scope: "receipt" }], WINDOW);
    const code = async (body: unknown) => ((r) => [r.status, r.body.error?.code])(await pinManifest(body));
    expect(await code({ manifest: { ...m, signature: "cd".repeat(64) } })).toEqual([400, "MANIFEST_SIGNATURE_INVALID"]);
    expect(await code({ manifest: await manifestOf(id, m.profiles, { published_at: TEST_NOW - 100, expires_at: TEST_NOW - 1 }) })).toEqual([400, "MANIFEST_EXPIRED"]);
    expect(await code({ manifest: await manifestOf(id, m.profiles, WINDOW, { fingerprint: "ef".repeat(32) }) })).toEqual([400, "MANIFEST_KEY_UNKNOWN"]);
    expect(await code({ manifest: { ...m, profiles: [] } })).toEqual([400, "MANIFEST_SIGNATURE_INVALID"]);
    expect(await code({ manifest: { verifier_id: 7 } })).toEqual([400, "MANIFEST_INVALID"]);
    // A window longer than MAX_MANIFEST_WINDOW (31 days), or a manifest published beyond the skew ahead, is MANIFEST_INVALID.
    expect(await code({ manifest: await manifestOf(id, m.profiles, { published_at: TEST_NOW - 100, expires_at: 1e15 }) })).toEqual([400, "MANIFEST_INVALID"]);
    expect(await code({ manifest: await manifestOf(id, m.profiles, { published_at: TEST_NOW - 100, expires_at: TEST_NOW - 100 + MAX_MANIFEST_WINDOW + 1 }) })).toEqual([400, "MANIFEST_INVALID"]);
    expect(await code({ manifest: await manifestOf(id, m.profiles, { published_at: TEST_NOW + 31, expires_at: TEST_NOW + 86_400 }) })).toEqual([400, "MANIFEST_INVALID"]);
    const stranger = await identity("stranger-verifier", "https://stranger-verifier.example", "v1");
    expect(await code({ manifest: await manifestOf(stranger, m.profiles, WINDOW) })).toEqual([404, "NOT_FOUND"]);
    expect((await h.call(`/v1/verifiers/${encodeURIComponent(id.issuer)}/manifest`)).status).toBe(404);
    expect((await h.call("/v1/admin/manifests", { method: "PUT", body: JSON.stringify({ manifest: m }) })).status).toBe(401);
    // The honest edge beside them: a full 31-day window, published just within the skew.
    expect((await pinManifest({ manifest: await manifestOf(id, m.profiles, { published_at: TEST_NOW + 30, expires_at: TEST_NOW + 30 + MAX_MANIFEST_WINDOW }) })).status).toBe(200);
  });

  it("pins a manifest that verifies and answers it by the verifier's urlencoded id", async () => {
    const id = await otherVerifier("pinned-verifier");
    const m = await manifestOf(id, [{ id: "p/two", comparison_scope: "claim" }], WINDOW);
    const pinned = await pinManifest({ manifest: m });
    expect(pinned.status).toBe(200);
    expect(pinned.body).toMatchObject({ verifier_id: id.issuer, manifest_hash: await manifestHash(m), profiles_digest: m.profiles_digest });
    const got = await h.call(`/v1/verifiers/${encodeURIComponent(id.issuer)}/manifest`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ verifier_id: id.issuer, here: false, current: true, manifest: m });
    const own = await h.call(`/v1/verifiers/${encodeURIComponent("https://countersign.test")}/manifest`);
    expect(own.body).toMatchObject({ here: true, manifest: { verifier_id: "https://countersign.test" } });
    expect((await h.call("/v1/verifiers/%E0%A4%A/manifest")).status).toBe(400);
  });

  it("answers an id holding a percent escape by its urlencoded form, decoded once, not as the id it would decode to twice", async () => {
    const id = await identity("percent-verifier", "https://percent-verifier.example/a%41b", "v1");
    expect((await h.pin(anchorFor(id))).status).toBe(200);
    const m = await manifestOf(id, [{ id: "p/percent", comparison_scope: "claim" }], WINDOW);
    expect((await pinManifest({ manifest: m })).status).toBe(200);
    const got = await h.call(`/v1/verifiers/${encodeURIComponent(id.issuer)}/manifest`);
    expect([got.status, got.body.verifier_id]).toEqual([200, id.issuer]);
    const other = await h.call(`/v1/verifiers/${encodeURIComponent("https://percent-verifier.example/aAb")}/manifest`);
    expect(other.status).toBe(404);
    const literal = await h.call(`/v1/verifiers/${encodeURIComponent("https://percent-verifier.example/100%")}/manifest`);
    expect([literal.status, literal.body.error?.code]).toEqual([404, "NOT_FOUND"]);
  });
});

describe("a manifest's signing key is judged at its not_after, as a receipt's key is", () => {
  it("refuses to pin a manifest whose key has lapsed, and a pinned one stops being current (and held) once its key lapses", async () => {
    const lapsed = await identity("lapsed-key-verifier", "https://lapsed-key-verifier.example", "v1");
    const anchor = anchorFor(lapsed);
    expect((await h.pin({ ...anchor, keys: [{ ...anchor.keys[0], not_after: TEST_NOW - 10 }] })).status).toBe(200);
    const back = await pinManifest({ manifest: await manifestOf(lapsed, [{ id: "lapse/back-dated", comparison_scope: "receipt" }], { published_at: TEST_NOW - 3600, expires_at: TEST_NOW + 86_400 }) });
    expect([back.status, back.body.error?.code]).toEqual([400, "MANIFEST_KEY_UNKNOWN"]);

    const ending = await identity("ending-key-verifier", "https://ending-key-verifier.example", "v1");
    const endingAnchor = anchorFor(ending);
    expect((await h.pin({ ...endingAnchor, keys: [{ ...endingAnchor.keys[0], not_after: TEST_NOW + 100 }] })).status).toBe(200);
    expect((await pinManifest({ manifest: await manifestOf(ending, [{ id: "lapse/ending", comparison_scope: "receipt" }], WINDOW) })).status).toBe(200);
    const path = `/v1/verifiers/${encodeURIComponent(ending.issuer)}/manifest`;
    const resolveAt = (at: Harness) => at.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ profile: "lapse/ending" }) });
    expect((await h.call(path)).body.current).toBe(true);
    expect((await resolveAt(h)).body).toMatchObject({ result: "HELD", verifier_id: ending.issuer });
    // Still inside the manifest's window, but past its key's not_after.
    const later = harness(env, ctx(), { now: () => TEST_NOW + 101 });
    expect((await later.call(path)).body).toMatchObject({ current: false, here: false });
    expect((await resolveAt(later)).body).toMatchObject({ result: "UNDECIDED", reason: "PROFILE_NOT_HELD", consult: [ending.issuer] });
  });

  it("re-pinning the anchor with the signing key's window narrowed to exclude the manifest's published_at drops the manifest; a window still covering it keeps it", async () => {
    const id = await otherVerifier("narrowed-key-verifier");
    const anchor = anchorFor(id);
    const path = `/v1/verifiers/${encodeURIComponent(id.issuer)}/manifest`;
    expect((await pinManifest({ manifest: await manifestOf(id, [{ id: "narrow/p", comparison_scope: "receipt" }], WINDOW) })).status).toBe(200);
    expect((await h.pin({ ...anchor, keys: [{ ...anchor.keys[0], not_before: WINDOW.published_at }] })).status).toBe(200);
    expect((await h.call(path)).status).toBe(200);
    expect((await h.pin({ ...anchor, keys: [{ ...anchor.keys[0], not_before: WINDOW.published_at + 1 }] })).status).toBe(200);
    expect((await h.call(path)).status).toBe(404);
  });
});

describe("PUT /v1/admin/manifests never goes back in time", () => {
  it("refuses a manifest published before the pinned one (409 MANIFEST_SUPERSEDED): it is not served and routing does not follow it", async () => {
    const id = await otherVerifier("superseding-verifier");
    const today = await manifestOf(id, [{ id: "sup/today", comparison_scope: "receipt" }], { published_at: TEST_NOW - 3600, expires_at: TEST_NOW + 86_400 });
    expect((await pinManifest({ manifest: today })).status).toBe(200);
    const yesterday = await manifestOf(id, [{ id: "sup/yesterday", comparison_scope: "receipt" }], { published_at: TEST_NOW - 86_400 - 3600, expires_at: TEST_NOW + 86_400 });
    const refused = await pinManifest({ manifest: yesterday });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("MANIFEST_SUPERSEDED");
    const served = await h.call(`/v1/verifiers/${encodeURIComponent(id.issuer)}/manifest`);
    expect(served.body).toMatchObject({ current: true, manifest: today });
    const resolve = (profile: string) => h.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ profile }) });
    expect((await resolve("sup/today")).body).toMatchObject({ result: "HELD", verifier_id: id.issuer });
    expect((await resolve("sup/yesterday")).body).toMatchObject({ result: "UNDECIDED", reason: "NO_COMPARISON_RELATION" });
    // The same document again, one re-signed in the same window, and a newer one are pinned.
    expect((await pinManifest({ manifest: today })).status).toBe(200);
    const sameWindow = await manifestOf(id, [{ id: "sup/changed", comparison_scope: "receipt" }], { published_at: TEST_NOW - 3600, expires_at: TEST_NOW + 86_400 });
    expect((await pinManifest({ manifest: sameWindow })).status).toBe(200);
    const newer = await manifestOf(id, [{ id: "sup/newer", comparison_scope: "receipt" }], { published_at: TEST_NOW - 60, expires_at: TEST_NOW + 86_400 });
    expect((await pinManifest({ manifest: newer })).status).toBe(200);
    expect((await pinManifest({ manifest: sameWindow })).body.error.code).toBe("MANIFEST_SUPERSEDED");
  });

  it("a manifest whose verifier_id is not an https:// URI is refused 400 MANIFEST_INVALID at pin, not looked up and answered 404", async () => {
    const id = await otherVerifier("bad-id-verifier");
    const m = await manifestOf(id, [{ id: "p/bad-id", comparison_scope: "receipt" }], WINDOW);
    for (const bad of ["not a uri", "http://bad-id-verifier.example", `${id.issuer}\u0000`, "https://", `${id.issuer}\u0085`]) {
      const r = await pinManifest({ manifest: { ...m, verifier_id: bad } });
      expect([r.status, r.body.error?.code], JSON.stringify(bad)).toEqual([400, "MANIFEST_INVALID"]);
    }
  });

  it("a verifier id that is not an https:// URI is 400 MALFORMED_REQUEST, not 404", async () => {
    for (const bad of ["http://plain.example", "not a uri", "https://"]) {
      const r = await h.call(`/v1/verifiers/${encodeURIComponent(bad)}/manifest`);
      expect([r.status, r.body.error?.code], bad).toEqual([400, "MALFORMED_REQUEST"]);
    }
    expect((await h.call(`/v1/verifiers/${encodeURIComponent("https://nobody-pinned.example")}/manifest`)).status).toBe(404);
  });
});

describe("POST /v1/profiles/resolve", () => {
  const resolve = (body: unknown, authorization?: string) =>
    h.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json", ...(authorization !== undefined ? { authorization } : {}) }, body: JSON.stringify(body) });
  let elsewhere: string;
  let expired: string;

  beforeAll(async () => {
    const b = await otherVerifier("routing-holder");
    elsewhere = b.issuer;
    expect((await pinManifest({ manifest: await manifestOf(b, [{ id: "route/elsewhere", comparison_scope: "receipt" }], WINDOW) })).status).toBe(200);
    const c = await otherVerifier("routing-lapsed");
    expired = c.issuer;
    // Pinned while current; resolve later runs at a clock past its expiry.
    expect((await pinManifest({ manifest: await manifestOf(c, [{ id: "route/lapsed", comparison_scope: "receipt" }], { published_at: TEST_NOW - 100, expires_at: TEST_NOW + 50 }) })).status).toBe(200);
  });

  it("answers HELD here, HELD elsewhere, PROFILE_NOT_HELD, NO_COMPARISON_RELATION and SET_EXHAUSTED", async () => {
    const here = await resolve({ profile: "ccs/1.3/evidence-chain" });
    expect(here.body).toMatchObject({ result: "HELD", verifier_id: "https://countersign.test", here: true, queried_verifiers: ["https://countersign.test"], complete: true });
    expect((await resolve({ profile: "route/elsewhere" })).body).toMatchObject({ result: "HELD", verifier_id: elsewhere, here: false });
    const later = harness(env, ctx(), { now: () => TEST_NOW + 100 });
    const lapsed = await later.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ profile: "route/lapsed" }) });
    expect(lapsed.body).toMatchObject({ result: "UNDECIDED", reason: "PROFILE_NOT_HELD", consult: [expired] });
    const none = await resolve({ profile: "route/nobody" });
    expect(none.body).toMatchObject({ result: "UNDECIDED", reason: "NO_COMPARISON_RELATION" });
    expect(none.body).not.toHaveProperty("verdict");
    const exhausted = await resolve({ profile: "route/elsewhere", exclude: ["https://upstream.example", elsewhere] });
    expect(exhausted.body.result).toBe("SET_EXHAUSTED");
    expect(exhausted.body.queried_verifiers.slice(0, 3)).toEqual(["https://upstream.example", elsewhere, "https://countersign.test"]);
    expect(exhausted.body.queried_verifiers).toContain(expired);
  });

  it("takes a relying-party token and refuses a malformed call with 400", async () => {
    expect((await resolve({ profile: "ccs/1.3/intake" }, "")).status).toBe(401);
    expect((await resolve({ profile: "" })).body.error.code).toBe("MALFORMED_REQUEST");
    expect((await resolve({ profile: "a", exclude: ["not a uri"] })).status).toBe(400);
    // rv-64: a verifier id is at most 256 UTF-8 bytes, not 256 characters (125 × "é" is 258 bytes).
    expect((await resolve({ profile: "a", exclude: [`https://${"é".repeat(124)}`] })).status).toBe(200);
    const long = await resolve({ profile: "a", exclude: [`https://${"é".repeat(125)}`] });
    expect(long.status).toBe(400);
    expect(long.body.error).toMatchObject({ code: "MALFORMED_REQUEST", detail: expect.stringContaining("256 UTF-8 bytes") });
    expect((await resolve({ profile: "a", exclude: Array.from({ length: 65 }, (_, i) => `https://v${i}.example`) })).status).toBe(400);
    expect((await resolve({ profile: "a", extra: 1 })).status).toBe(400);
  });

  it("refuses an exclude entry that no verifier id can be (a control character, no host), as GET /v1/verifiers/{id}/manifest does", async () => {
    // Review rv-93: exclude took any "https://" + non-space text, a NUL or a missing host
    // included, and echoed it into queried_verifiers, the trace a relying party passes on.
    for (const id of ["https://a.example/\u0000", "https://a.example/\u007f", "https:///x", "https://\\x", "https://a.example/\u0085"]) {
      const res = await resolve({ profile: "a", exclude: [id] });
      expect(res.status, JSON.stringify(id)).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
      expect((await h.call(`/v1/verifiers/${encodeURIComponent(id)}/manifest`)).status, JSON.stringify(id)).toBe(400);
    }
    expect((await resolve({ profile: "a", exclude: ["https://a.example/x?y=1"] })).status).toBe(200);
  });
});

describe("MANIFEST_STALE", () => {
  it("warns on this deployment's receipt bound to a manifest whose profiles have changed since", async () => {
    const before = harness({ ...env, PROFILES: "ccs/1.3/intake" } as Env, ctx());
    const issued = (await before.intake(command())).body.receipt;
    const same = await before.verify({ receipt: issued, audience: AUDIENCE, mode: "audit" });
    expect(same.body.failures).toEqual([]);
    const after = harness(env, ctx());
    const judged = await after.verify({ receipt: issued, audience: AUDIENCE, mode: "audit" });
    expect(judged.body.valid).toBe(true);
    expect(judged.body.failures).toEqual([expect.objectContaining({ code: "MANIFEST_STALE", severity: "WARNING" })]);
    // A chain judges each kept receipt by the receipt route's predicate: the same warning, at its hop.
    const chain = await buildChain("stale-chain", [{ receipt: issued }]);
    const post = (h: Harness) => h.call("/v1/chains/verify", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ chain }) });
    expect((await post(before)).body).toMatchObject({ chain_valid: true, failures: [] });
    expect((await post(after)).body).toMatchObject({ chain_valid: true, failures: [expect.objectContaining({ code: "MANIFEST_STALE", severity: "WARNING", hop: 0 })] });
  });

  it("warns on a pinned issuer's receipt once its pinned manifest's profiles differ from the one its configuration bound", async () => {
    const id = await otherVerifier("stale-issuer");
    const first = await manifestOf(id, [{ id: "s/one", comparison_scope: "receipt" }, { id: "s/two", comparison_scope: "chain" }], WINDOW);
    const config = await canonicalConfig({ signingKeyId: "v1", manifestHash: await manifestHash(first) });
    expect((await pinManifest({ manifest: first, configurations: [{ config }] })).status).toBe(200);
    const request = { agent_id: "a", tool: "t", params: {}, timestamp: TEST_NOW - 3, trace_id: await labelHex("stale/trace", 16) };
    const unsigned = await unsignedReceipt({
      request, issuer: id.issuer, audience: AUDIENCE, verdict: "allow", issued_at: TEST_NOW - 2, lifetime: 60, nonce: await labelHex("stale/nonce", 32), sequence: 1, max_clock_skew: 5,
      rule_summary: "SEC-001=allow", config_hash: await configHash(config), legacy_receipt: await labelHex("stale/legacy", 32),
    });
    const receipt = signReceipt(unsigned, id.seed);
    expect((await h.verify({ receipt, audience: AUDIENCE, mode: "audit" })).body.failures).toEqual([]);
    const second = await manifestOf(id, [{ id: "s/one", comparison_scope: "receipt" }], WINDOW);
    expect((await pinManifest({ manifest: second })).status).toBe(200);
    const judged = await h.verify({ receipt, audience: AUDIENCE, request });
    expect(judged.body).toMatchObject({ valid: true, decision: "accept" });
    expect(judged.body.failures.map((f: any) => f.code)).toEqual(["MANIFEST_STALE"]);
  });
});
