/**
 * The admin registry's read-check-writes under concurrency: KV has no compare-and-set, so these
 * calls are serialised by the AdminRegistry object. Each test fires its calls at once
 * (Promise.all) through one app, as a careless integrator or a retrying client would.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { anchorFor, identity } from "../../vectors/ccs/factory.js";
import { AUDIENCE, harness, TEST_NOW } from "../support/app-harness.js";
import { manifestOf } from "../support/manifests.js";
import { canonicalConfig, configHash } from "../../worker/protocol/issuing/config.js";
import { manifestHash } from "../../worker/protocol/manifest/manifest.js";
import { commitManifest } from "../../worker/admin-registry.js";
import { durableLedgerStub, kvAnchorStore, ledgerClient } from "../../worker/stores.js";
import { ledgerShardKey } from "../../worker/config.js";
import type { Env } from "../../worker/env.js";
import { sha256Hex } from "../../worker/protocol/digest.js";

const h = () => harness(env, createExecutionContext());
const ROUNDS = 8;
/** Whether `token` is taken as a relying party's: GET /v1/usage without its parameter is 400 once authenticated, else 401. */
const authenticates = async (app: ReturnType<typeof h>, token: string) => (await app.call("/v1/usage", { headers: { authorization: `Bearer ${token}` } })).status !== 401;

describe("relying-party tokens are handed to one party, whatever arrives at once", () => {
  it("two rotations (or a rotation and a registration) given one token: one answers 200/201, the other 409 RELYING_PARTY_EXISTS, and the token authenticates the winner", async () => {
    const app = h();
    for (const name of ["race-rot-a", "race-rot-b"]) {
      expect((await app.admin("POST", "/v1/admin/relying-parties", { name, audiences: [AUDIENCE] })).status).toBe(201);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const token = `race-shared-token-${round}-0123456789abcdefghijklmnop`;
      const calls = [
        app.admin("POST", "/v1/admin/relying-parties/race-rot-a/token", { token }),
        app.admin("POST", "/v1/admin/relying-parties/race-rot-b/token", { token }),
        app.admin("POST", "/v1/admin/relying-parties", { name: `race-reg-${round}`, audiences: [AUDIENCE], token }),
      ];
      const answers = await Promise.all(calls);
      const won = answers.filter((a) => a.status === 200 || a.status === 201);
      expect(won.length, `round ${round}: ${answers.map((a) => a.status)}`).toBe(1);
      for (const lost of answers.filter((a) => !won.includes(a))) expect([lost.status, lost.body.error.code]).toEqual([409, "RELYING_PARTY_EXISTS"]);
      // The token authenticates (400 for the missing invocation_id, not 401).
      expect((await authenticates(app, token))).toBe(true);
    }
  });

  it("registrations of one name at once: one 201, the rest 409, and only the winner's token authenticates", async () => {
    const app = h();
    const tokens = Array.from({ length: ROUNDS }, (_, i) => `race-same-name-token-${i}-0123456789abcdefghijklmnop`);
    const answers = await Promise.all(tokens.map((token) => app.admin("POST", "/v1/admin/relying-parties", { name: "race-same-name", audiences: [AUDIENCE], token })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(ROUNDS - 1);
    const winner = answers.find((a) => a.status === 201)!.body.token;
    for (const token of tokens) {
      expect(await authenticates(app, token), token).toBe(token === winner);
    }
  });
});

describe("a token a party gave up is not handed to another while other isolates may still take it as the first's (review rv-79)", () => {
  // Each harness is an isolate of its own (its own token cache). Before, a token rotated out (or
  // deleted) could be supplied to another party at once: an isolate that had cached it as the first
  // party's took the new holder's calls as the first party's for up to 30 s, so a usage receipt the
  // new holder stored there landed in the first party's ledger (it read it, the new holder did not).
  it("rotated out or deleted, it is 409 RELYING_PARTY_EXISTS when supplied again, and authenticates nobody meanwhile", async () => {
    const serving = h();
    const other = h();
    const rotatedOut = "retired-token-rotated-0123456789abcdef01";
    expect((await serving.admin("POST", "/v1/admin/relying-parties", { name: "retiring-a", audiences: [AUDIENCE], token: rotatedOut })).status).toBe(201);
    expect(await authenticates(other, rotatedOut)).toBe(true);
    expect((await serving.admin("POST", "/v1/admin/relying-parties/retiring-a/token", {})).status).toBe(200);
    expect(await authenticates(serving, rotatedOut)).toBe(false);
    const taken = await serving.admin("POST", "/v1/admin/relying-parties", { name: "retiring-b", audiences: [AUDIENCE], token: rotatedOut });
    expect([taken.status, taken.body.error?.code]).toEqual([409, "RELYING_PARTY_EXISTS"]);
    // The registration that gave it up may take it back (npm start does so with DEMO_RP_TOKEN): an
    // isolate that still caches it takes it as that party's, which it is.
    const back = await serving.admin("POST", "/v1/admin/relying-parties/retiring-a/token", { token: rotatedOut });
    expect(back.status).toBe(200);
    expect(await authenticates(serving, rotatedOut)).toBe(true);
    expect((await serving.admin("POST", "/v1/admin/relying-parties/retiring-a/token", {})).status).toBe(200);
    const stillTaken = await serving.admin("POST", "/v1/admin/relying-parties", { name: "retiring-b", audiences: [AUDIENCE], token: rotatedOut });
    expect([stillTaken.status, stillTaken.body.error?.code]).toEqual([409, "RELYING_PARTY_EXISTS"]);

    const deleted = "retired-token-deleted-0123456789abcdef01";
    expect((await serving.admin("POST", "/v1/admin/relying-parties", { name: "retiring-c", audiences: [AUDIENCE], token: deleted })).status).toBe(201);
    expect((await serving.admin("DELETE", "/v1/admin/relying-parties/retiring-c")).status).toBe(200);
    for (const name of ["retiring-c", "retiring-d"]) {
      const again = await serving.admin("POST", "/v1/admin/relying-parties", { name, audiences: [AUDIENCE], token: deleted });
      expect([name, again.status, again.body.error?.code]).toEqual([name, 409, "RELYING_PARTY_EXISTS"]);
    }
    expect(await authenticates(serving, deleted)).toBe(false);
    // The record is kept only until KV expires it.
    const { keys } = await env.ANCHORS.list({ prefix: "rp-token:" });
    const names = [`rp-token:${await sha256Hex(deleted)}`, `rp-token:${await sha256Hex(rotatedOut)}`];
    const retired = keys.filter((k) => names.includes(k.name));
    expect(retired).toHaveLength(2);
    for (const k of retired) expect(k.expiration, k.name).toBeGreaterThan(0);
  });
});

describe("concurrent pins of one issuer lose no key", () => {
  it("ten pins at once, each with a new key: every key is in keys or previous_keys afterwards", async () => {
    const app = h();
    const issuer = "https://race-pins.example";
    const ids = await Promise.all(Array.from({ length: 11 }, (_, i) => identity(`race-pins-${i}`, issuer, `k${i}`)));
    expect((await app.pin(anchorFor(ids[0]))).status).toBe(200);
    const answers = await Promise.all(ids.slice(1).map((id) => app.pin(anchorFor(id))));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    // Read through another app: this one's anchor cache holds whichever answer came back last.
    const view = await h().admin("GET", `/v1/issuers/${encodeURIComponent(issuer)}`);
    const kids = [...view.body.keys, ...(view.body.previous_keys ?? [])].map((k: { kid: string }) => k.kid).sort();
    expect(kids).toEqual(ids.map((id) => id.kid).sort());
  });
});

describe("one key, one issuer, whatever arrives at once", () => {
  it("two issuers pinning one new key at once: one 200, the other 409 ANCHOR_KEY_IN_USE", async () => {
    const app = h();
    for (let round = 0; round < 4; round++) {
      const id = await identity(`race-shared-key-${round}`, `https://race-key-a-${round}.example`, "k1");
      const answers = await Promise.all([app.pin(anchorFor(id)), app.pin({ ...anchorFor(id), issuer: `https://race-key-b-${round}.example` })]);
      expect(answers.map((a) => a.status).sort(), `round ${round}`).toEqual([200, 409]);
      expect(answers.find((a) => a.status === 409)!.body.error.code).toBe("ANCHOR_KEY_IN_USE");
    }
  });
});

describe("a manifest pin and an anchor pin of one issuer at once keep each other's write", () => {
  it("every round: the key the anchor pin added is pinned and the manifest pinned beside it is served", async () => {
    const issuer = "https://race-manifest.example";
    const signer = await identity("race-manifest-signer", issuer, "v1");
    expect((await h().pin(anchorFor(signer))).status).toBe(200);
    for (let round = 0; round < 6; round++) {
      const app = h();
      const added = await identity(`race-manifest-added-${round}`, issuer, `k${round}`);
      const m = await manifestOf(signer, [{ id: `race/${round}`, comparison_scope: "receipt" }], { published_at: TEST_NOW - 600 + round, expires_at: TEST_NOW + 86_400 });
      const [pinned, manifest] = await Promise.all([app.pin(anchorFor(signer, added)), app.admin("PUT", "/v1/admin/manifests", { manifest: m })]);
      expect([pinned.status, manifest.status], `round ${round}: ${manifest.text}`).toEqual([200, 200]);
      const fresh = h();
      const view = await fresh.admin("GET", `/v1/issuers/${encodeURIComponent(issuer)}`);
      expect(view.body.keys.map((k: { kid: string }) => k.kid), `round ${round}`).toContain(`k${round}`);
      const served = await fresh.call(`/v1/verifiers/${encodeURIComponent(issuer)}/manifest`);
      expect([served.status, served.body.manifest?.profiles?.[0]?.id], `round ${round}`).toEqual([200, `race/${round}`]);
    }
  });
});

describe("manifest pins of one verifier sent at once keep each other's configurations (review rv-74)", () => {
  it("every configuration given with a pin that answered 200 is bound, and each answer's bindings are those written", async () => {
    // Shown live: four PUT /v1/admin/manifests of one manifest at once, each with its own
    // configuration, all 200, and the manifest served with 2 of the 4 bindings: each pin's bindings
    // were built from the anchor the route read, and written over the others'.
    const issuer = "https://race-bindings.example";
    const signer = await identity("race-bindings-signer", issuer, "v1");
    const app = h();
    expect((await app.pin(anchorFor(signer))).status).toBe(200);
    const m = await manifestOf(signer, [{ id: "race/bindings", comparison_scope: "receipt" }], { published_at: TEST_NOW - 600, expires_at: TEST_NOW + 86_400 });
    const hash = await manifestHash(m);
    const configs = await Promise.all(Array.from({ length: 6 }, (_, i) => canonicalConfig({ signingKeyId: `race-k${i}`, manifestHash: hash })));
    const answers = await Promise.all(configs.map((config) => app.admin("PUT", "/v1/admin/manifests", { manifest: m, configurations: [{ config }] })));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const hashes = await Promise.all(configs.map((config) => configHash(config)));
    const served = await h().call(`/v1/verifiers/${encodeURIComponent(issuer)}/manifest`);
    expect(served.body.bindings.map((b: { config_hash: string }) => b.config_hash).sort()).toEqual([...hashes].sort());
    // Each answer's bindings are those its write left: its own configuration among them.
    for (const [i, a] of answers.entries()) expect(a.body.bindings.map((b: { config_hash: string }) => b.config_hash)).toContain(hashes[i]);
  });

  it("a manifest pin written after a re-pin narrowed its key's window to exclude its published_at is refused, as the re-pin drops such a manifest", async () => {
    const issuer = "https://race-narrowed.example";
    const signer = await identity("race-narrowed-signer", issuer, "v1");
    const anchor = anchorFor(signer);
    const window = { published_at: TEST_NOW - 600, expires_at: TEST_NOW + 86_400 };
    // The anchor as the re-pin left it: its key valid only from after the manifest's published_at.
    expect((await h().pin({ ...anchor, keys: [{ ...anchor.keys[0], not_before: window.published_at + 1 }] })).status).toBe(200);
    const m = await manifestOf(signer, [{ id: "race/narrowed", comparison_scope: "receipt" }], window);
    const e = env as unknown as Env;
    const pinned = { document: m, manifest_hash: await manifestHash(m), pinned_at: TEST_NOW, bindings: [] };
    const written = await commitManifest(kvAnchorStore(e, 2000, new Map()), ledgerClient(durableLedgerStub(e), 2000, ledgerShardKey(e)), issuer, pinned, []);
    expect(written).toMatchObject({ ok: false, status: 400, code: "MANIFEST_KEY_UNKNOWN" });
  });
});
