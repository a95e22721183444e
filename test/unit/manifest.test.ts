/**
 * Capability manifests as pure code (what the CLI runs): signature and profiles_digest, every
 * field covered, manifest_hash entering config_hash, pinning refusals, and each routing outcome.
 */
import { describe, expect, it } from "vitest";
import { buildAnchorRecord, pinnedIssuer, type AnchorRecord } from "../../worker/protocol/anchors.js";
import { jcs, prefixedDigest } from "../../worker/protocol/digest.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { canonicalConfig, configHash } from "../../worker/protocol/issuing/config.js";
import { manifestContent, manifestHash, MAX_MANIFEST_WINDOW, verifyManifest, type Manifest } from "../../worker/protocol/manifest/manifest.js";
import { buildPinnedManifest, joinBindings, pinnedBinding } from "../../worker/protocol/manifest/pinning.js";
import { COUNTERSIGN_PROFILES } from "../../worker/protocol/manifest/profiles.js";
import { resolveProfile, type Candidate } from "../../worker/protocol/manifest/resolve.js";
import { manifestStaleness } from "../../worker/protocol/manifest/staleness.js";
import { anchorFor, identity } from "../../vectors/ccs/factory.js";
import { manifestOf } from "../support/manifests.js";

const NOW = 1_900_000_000;
const WINDOW = { published_at: NOW - 100, expires_at: NOW + 86_400 };
const PROFILES = [{ id: "ccs/1.3/receipt-verification", comparison_scope: "receipt" }, { id: "x/other", comparison_scope: "claim" }];

async function setup(label = "manifest-unit") {
  const id = await identity(label, `https://${label}.example`, "m1");
  const built = await buildAnchorRecord(anchorFor(id), NOW);
  if (built.kind !== "built") throw new Error("anchor");
  const record: AnchorRecord = built.record;
  const keys = pinnedIssuer(record).keys;
  return { id, record, keys };
}

const check = (value: unknown, keys: Awaited<ReturnType<typeof setup>>["keys"], now = NOW) => verifyManifest(value, { keys, now, skew: 30, verifier: nobleVerifier });

describe("a signed manifest, verified with pure code", () => {
  it("verifies: signature under the pinned key it names, profiles_digest over the JCS of profiles", async () => {
    const { id, keys } = await setup();
    const m = await manifestOf(id, PROFILES, WINDOW);
    expect(m.profiles_digest).toBe(await prefixedDigest(jcs(PROFILES)));
    const r = await check(m, keys);
    expect(r).toMatchObject({ ok: true, kid: "m1", manifestHash: await prefixedDigest(jcs(manifestContent(m))) });
  });

  it("changing any field breaks verification", async () => {
    const { id, keys } = await setup();
    const m = await manifestOf(id, PROFILES, WINDOW);
    const changed: Record<keyof Manifest, unknown> = {
      manifest_version: "2",
      verifier_id: "https://someone-else.example",
      profiles: [PROFILES[0]],
      challenge_policy: { ...m.challenge_policy, max_deadline: 301 },
      signing_key_fingerprint: "0".repeat(64),
      published_at: m.published_at - 1,
      expires_at: m.expires_at + 1,
      profiles_digest: "sha256:" + "0".repeat(64),
      signature: (m.signature[0] === "0" ? "1" : "0") + m.signature.slice(1),
    };
    for (const [field, value] of Object.entries(changed)) {
      const r = await check({ ...m, [field]: value }, keys);
      expect(r.ok, field).toBe(false);
    }
    // Changing the profiles with a matching digest still breaks the signature.
    const profiles = [PROFILES[0]];
    expect(await check({ ...m, profiles, profiles_digest: await prefixedDigest(jcs(profiles)) }, keys)).toMatchObject({ ok: false, code: "MANIFEST_SIGNATURE_INVALID" });
    expect(await check({ ...m, extra: 1 }, keys)).toMatchObject({ ok: false, code: "MANIFEST_INVALID" });
    // A verifier_id no issuer can be pinned as is out of form, not an unknown key: the CLI and the service answer alike.
    for (const bad of ["https://", "https://a\u0000b.example", "https://a\u0085.example"]) {
      expect(await check({ ...m, verifier_id: bad }, keys), JSON.stringify(bad)).toMatchObject({ ok: false, code: "MANIFEST_INVALID" });
    }
  });

  it("refuses an expired manifest and one whose key is not pinned", async () => {
    const { id, keys } = await setup();
    const m = await manifestOf(id, PROFILES, WINDOW);
    expect(await check(m, keys, WINDOW.expires_at)).toMatchObject({ ok: false, code: "MANIFEST_EXPIRED" });
    const other = await setup("manifest-unit-other");
    expect(await check(m, other.keys)).toMatchObject({ ok: false, code: "MANIFEST_KEY_UNKNOWN" });
  });

  it("refuses a manifest whose signing key's not_after has passed at verification time, however it was back-dated (MANIFEST_KEY_UNKNOWN)", async () => {
    const id = await identity("manifest-unit-lapsed-key", "https://manifest-unit-lapsed-key.example", "m1");
    const anchor = anchorFor(id);
    const built = await buildAnchorRecord({ ...anchor, keys: [{ ...anchor.keys[0], not_after: NOW - 50 }] }, NOW - 1000);
    if (built.kind !== "built") throw new Error("anchor");
    const keys = pinnedIssuer(built.record).keys;
    // Published while the key was valid; judged after its not_after: refused, as a receipt signed by it would be.
    const m = await manifestOf(id, PROFILES, WINDOW);
    expect(await check(m, keys)).toMatchObject({ ok: false, code: "MANIFEST_KEY_UNKNOWN", detail: expect.stringMatching(/not_after/) });
    // At not_after itself the key is still valid (bounds inclusive, no skew).
    expect(await check(m, keys, NOW - 50)).toMatchObject({ ok: true });
  });

  it("a manifest change changes config_hash; re-signing for another window does not", async () => {
    const { id } = await setup();
    const a = await manifestOf(id, PROFILES, WINDOW);
    const resigned = await manifestOf(id, PROFILES, { published_at: WINDOW.published_at + 86_400, expires_at: WINDOW.expires_at + 86_400 });
    const b = await manifestOf(id, [PROFILES[0]], WINDOW);
    const hashOf = async (m: Manifest) => configHash(await canonicalConfig({ signingKeyId: "k", manifestHash: await manifestHash(m) }));
    expect(resigned.signature).not.toBe(a.signature);
    expect(await manifestHash(resigned)).toBe(await manifestHash(a));
    expect(await hashOf(resigned)).toBe(await hashOf(a));
    expect(await hashOf(b)).not.toBe(await hashOf(a));
    expect(await hashOf(a)).not.toBe(await configHash(await canonicalConfig({ signingKeyId: "k" })));
  });
});

describe("pinning another verifier's manifest", () => {
  const opts = { now: NOW, skew: 30, verifier: nobleVerifier };

  it("refuses a bad signature, an expired manifest and an unknown fingerprint, each with its code", async () => {
    const { id, record, keys } = await setup();
    const m = await manifestOf(id, PROFILES, WINDOW);
    const forged = { ...m, signature: "ab".repeat(64) };
    expect(await buildPinnedManifest({ manifest: forged }, record, keys, opts)).toMatchObject({ kind: "refused", code: "MANIFEST_SIGNATURE_INVALID" });
    const expired = await manifestOf(id, PROFILES, { published_at: NOW - 1000, expires_at: NOW - 10 });
    expect(await buildPinnedManifest({ manifest: expired }, record, keys, opts)).toMatchObject({ kind: "refused", code: "MANIFEST_EXPIRED" });
    const unknown = await manifestOf(id, PROFILES, WINDOW, { fingerprint: "ab".repeat(32) });
    expect(await buildPinnedManifest({ manifest: unknown }, record, keys, opts)).toMatchObject({ kind: "refused", code: "MANIFEST_KEY_UNKNOWN" });
  });

  it("refuses a window longer than MAX_MANIFEST_WINDOW, or a published_at beyond the skew ahead, as MANIFEST_INVALID; the longest window passes", async () => {
    const { id, record, keys } = await setup();
    const pin = async (window: { published_at: number; expires_at: number }) => buildPinnedManifest({ manifest: await manifestOf(id, PROFILES, window) }, record, keys, opts);
    expect(await pin({ published_at: NOW - 100, expires_at: 1e15 })).toMatchObject({ kind: "refused", code: "MANIFEST_INVALID", detail: expect.stringMatching(/validity window/) });
    expect(await pin({ published_at: NOW - 100, expires_at: NOW - 100 + MAX_MANIFEST_WINDOW + 1 })).toMatchObject({ kind: "refused", code: "MANIFEST_INVALID" });
    expect(await pin({ published_at: NOW + opts.skew + 1, expires_at: NOW + 86_400 })).toMatchObject({ kind: "refused", code: "MANIFEST_INVALID", detail: expect.stringMatching(/future/) });
    expect(await pin({ published_at: NOW - 100, expires_at: NOW - 100 + MAX_MANIFEST_WINDOW })).toMatchObject({ kind: "pinned" });
    expect(MAX_MANIFEST_WINDOW).toBe(31 * 86_400);
  });

  it("binds configurations to the profiles_digest of the manifest they name, and tells a receipt's manifest stale", async () => {
    const { id, record, keys } = await setup();
    const first = await manifestOf(id, PROFILES, WINDOW);
    const config = await canonicalConfig({ signingKeyId: "m1", manifestHash: await manifestHash(first) });
    const hash = await configHash(config);
    const pinned = await buildPinnedManifest({ manifest: first, configurations: [{ config, config_hash: hash }] }, record, keys, opts);
    if (pinned.kind !== "pinned") throw new Error(pinned.detail);
    expect(manifestStaleness(pinnedBinding(pinned.pinned, hash))).toBeNull();
    const second = await manifestOf(id, [PROFILES[0]], WINDOW);
    const again = await buildPinnedManifest({ manifest: second }, { ...record, manifest: pinned.pinned }, keys, opts);
    if (again.kind !== "pinned") throw new Error(again.detail);
    expect(manifestStaleness(pinnedBinding(again.pinned, hash))).toMatchObject({ code: "MANIFEST_STALE", severity: "WARNING" });
    expect(pinnedBinding(again.pinned, "sha256:" + "0".repeat(64))).toBeNull();
    const wrong = await buildPinnedManifest({ manifest: first, configurations: [{ config, config_hash: "sha256:" + "0".repeat(64) }] }, record, keys, opts);
    expect(wrong).toMatchObject({ kind: "refused", code: "MALFORMED_REQUEST" });
  });

  it("a configuration given more than once in one pin is bound once (review rv-78: 16 copies left 16 bindings of one config_hash)", async () => {
    const { id, record, keys } = await setup("manifest-unit-twice");
    const first = await manifestOf(id, PROFILES, WINDOW);
    const config = await canonicalConfig({ signingKeyId: "m1", manifestHash: await manifestHash(first) });
    const other = await canonicalConfig({ signingKeyId: "m2", manifestHash: await manifestHash(first) });
    const pinned = await buildPinnedManifest({ manifest: first, configurations: [{ config }, { config: other }, { config }, { config }] }, record, keys, opts);
    if (pinned.kind !== "pinned") throw new Error(pinned.detail);
    // Newest last, one per config_hash: the repeated one at its last place.
    expect(pinned.pinned.bindings.map((b) => b.config_hash)).toEqual([await configHash(other), await configHash(config)]);
    expect(joinBindings(pinned.pinned.bindings, pinned.added)).toEqual(pinned.pinned.bindings);
  });

  it("a configuration may name the manifest pinned before, without its content, when the new pin replaces it", async () => {
    const { id, record, keys } = await setup("manifest-unit-before");
    const first = await manifestOf(id, PROFILES, WINDOW);
    const pinned = await buildPinnedManifest({ manifest: first }, record, keys, opts);
    if (pinned.kind !== "pinned") throw new Error(pinned.detail);
    const config = await canonicalConfig({ signingKeyId: "m1", manifestHash: await manifestHash(first) });
    const hash = await configHash(config);
    const second = await manifestOf(id, [PROFILES[0]], WINDOW);
    const again = await buildPinnedManifest({ manifest: second, configurations: [{ config }] }, { ...record, manifest: pinned.pinned }, keys, opts);
    if (again.kind !== "pinned") throw new Error(again.detail);
    expect(again.pinned.bindings).toEqual([{ config_hash: hash, manifest_hash: await manifestHash(first), profiles_digest: first.profiles_digest }]);
    expect(manifestStaleness(pinnedBinding(again.pinned, hash))).toMatchObject({ code: "MANIFEST_STALE" });
  });
});

describe("profile routing", () => {
  const SELF = "https://self.example";
  const manifestWith = (ids: string[], expiresAt = NOW + 1000) =>
    ({ published_at: NOW - 10, expires_at: expiresAt, profiles: ids.map((id) => ({ id, comparison_scope: "receipt" })) }) as unknown as Candidate["manifest"];
  const self: Candidate = { verifier_id: SELF, manifest: manifestWith(COUNTERSIGN_PROFILES.map((p) => p.id)) };
  const b: Candidate = { verifier_id: "https://b.example", manifest: manifestWith(["held/elsewhere"]) };
  const c: Candidate = { verifier_id: "https://c.example", manifest: manifestWith(["declared/expired"], NOW - 1) };
  const resolve = (profile: string, exclude: string[] = []) => resolveProfile({ profile, exclude, self, pinned: [c, b], now: NOW, skew: 30 });

  it("HELD here first, then HELD elsewhere, with the trace of who was asked", () => {
    expect(resolve("ccs/1.3/intake")).toEqual({ result: "HELD", profile: "ccs/1.3/intake", verifier_id: SELF, here: true, queried_verifiers: [SELF] });
    expect(resolve("held/elsewhere")).toEqual({ result: "HELD", profile: "held/elsewhere", verifier_id: b.verifier_id, here: false, queried_verifiers: [SELF, b.verifier_id] });
    expect(resolve("ccs/1.3/intake", [SELF])).toMatchObject({ result: "SET_EXHAUSTED" });
  });

  it("UNDECIDED PROFILE_NOT_HELD when only a manifest no longer current declares it, NO_COMPARISON_RELATION when none does", () => {
    expect(resolve("declared/expired")).toEqual({ result: "UNDECIDED", profile: "declared/expired", reason: "PROFILE_NOT_HELD", consult: [c.verifier_id], queried_verifiers: [SELF, b.verifier_id, c.verifier_id] });
    expect(resolve("nobody/holds")).toEqual({ result: "UNDECIDED", profile: "nobody/holds", reason: "NO_COMPARISON_RELATION", queried_verifiers: [SELF, b.verifier_id, c.verifier_id] });
  });

  it("a pinned manifest whose signing key's not_after has passed is no longer current: PROFILE_NOT_HELD, consult it", () => {
    const lapsed: Candidate = { verifier_id: "https://d.example", manifest: manifestWith(["held/lapsed-key"]), key_valid_until: NOW - 1 };
    const still: Candidate = { ...lapsed, key_valid_until: NOW };
    const run = (d: Candidate) => resolveProfile({ profile: "held/lapsed-key", exclude: [], self, pinned: [d], now: NOW, skew: 30 });
    expect(run(lapsed)).toMatchObject({ result: "UNDECIDED", reason: "PROFILE_NOT_HELD", consult: [lapsed.verifier_id] });
    expect(run(still)).toMatchObject({ result: "HELD", verifier_id: still.verifier_id });
    expect(run({ ...lapsed, key_valid_until: -Infinity })).toMatchObject({ result: "UNDECIDED", reason: "PROFILE_NOT_HELD" });
  });

  it("SET_EXHAUSTED when every verifier declaring it was excluded, its trace the exclusions then everyone asked", () => {
    expect(resolve("held/elsewhere", ["https://far.example", b.verifier_id])).toEqual({
      result: "SET_EXHAUSTED",
      profile: "held/elsewhere",
      queried_verifiers: ["https://far.example", b.verifier_id, SELF, c.verifier_id],
    });
  });
});
