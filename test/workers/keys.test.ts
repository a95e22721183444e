/**
 * Replay state and revocation belong to keys, not to issuers or kids: no lockout through the
 * sequence, an audited reset, revocation by fingerprint that no re-pin undoes, and a key's
 * not_after judged when the receipt is verified.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerName, SEQUENCE_RESETS_PAGE } from "../../worker/protocol/ledger.js";
import { anchorFor, identity, makeReceipt, type Identity, type ReceiptSpec } from "../../vectors/ccs/factory.js";
import { AUDIENCE, harness, TEST_NOW } from "../support/app-harness.js";

const h = () => harness(env, createExecutionContext());
const codes = (r: { body: { failures: { code: string }[] } }) => r.body.failures.map((f) => f.code);
const MAX_SEQUENCE = Number.MAX_SAFE_INTEGER;

let n = 0;
const keyOf = (name: string, kid = "k1") => identity(`keys/${name}/${kid}`, `https://keys-${name}.example`, kid);
/** A verify body signed by `id`; `sequence` defaults to a fresh one. */
async function bodyFor(id: Identity, extra: Partial<ReceiptSpec> = {}) {
  const { receipt, request } = await makeReceipt(id, { label: `keys/${id.issuer}/${id.kid}/${++n}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: 100 + ++n, ...extra });
  return { receipt, audience: AUDIENCE, request } as Record<string, any>;
}
const issuerPath = (issuer: string) => `/v1/issuers/${encodeURIComponent(issuer)}`;

describe("no lockout through the sequence", () => {
  it("by default, a receipt with sequence 2^53-1 does not lock its issuer out: lower sequences still pass", async () => {
    const app = h();
    const k1 = await keyOf("max-sequence");
    expect((await app.pin(anchorFor(k1))).status).toBe(200);
    expect((await app.verify(await bodyFor(k1, { sequence: MAX_SEQUENCE }))).body.valid).toBe(true);
    expect((await app.verify(await bodyFor(k1, { sequence: 1 }))).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("by default, a receipt presented after the issuer signed more than 1,024 others is accepted", async () => {
    const app = h();
    const k1 = await keyOf("late-presenter");
    await app.pin(anchorFor(k1));
    const early = await bodyFor(k1, { sequence: 10 });
    expect((await app.verify(await bodyFor(k1, { sequence: 5000 }))).body.valid).toBe(true);
    expect((await app.verify(early)).body).toMatchObject({ valid: true, nonce_consumed: true });
  });

  it("by default, a sequence repeated by a receipt of the same key whose nonce is retained is REPLAY_DETECTED; another key may use it", async () => {
    const app = h();
    const k1 = await keyOf("repeat");
    const k2 = await keyOf("repeat", "k2");
    await app.pin(anchorFor(k1, k2));
    expect((await app.verify(await bodyFor(k1, { sequence: 42 }))).body.valid).toBe(true);
    const repeated = await app.verify(await bodyFor(k1, { sequence: 42 }));
    expect(codes(repeated)).toEqual(["REPLAY_DETECTED"]);
    expect(repeated.body.nonce_consumed).toBe(false);
    expect((await app.verify(await bodyFor(k2, { sequence: 42 }))).body.valid).toBe(true);
  });

  it("a receipt without a sequence is never sequence-checked", async () => {
    const app = h();
    const k1 = await keyOf("no-sequence");
    await app.pin({ ...anchorFor(k1), sequence_policy: "window" });
    for (let i = 0; i < 2; i++) expect((await app.verify(await bodyFor(k1, { omit: ["sequence"] }))).body.valid).toBe(true);
  });

  it("the strict window is the anchor's opt-in, per key: a rotated key starts afresh", async () => {
    const app = h();
    const k1 = await keyOf("window-rotation");
    const k2 = await keyOf("window-rotation", "k2");
    await app.pin({ ...anchorFor(k1), sequence_policy: "window" });
    expect((await app.call(issuerPath(k1.issuer))).body.sequence_policy).toBe("window");
    expect((await app.verify(await bodyFor(k1, { sequence: MAX_SEQUENCE }))).body.valid).toBe(true);
    expect(codes(await app.verify(await bodyFor(k1, { sequence: 5 })))).toEqual(["REPLAY_DETECTED"]);
    await app.pin({ ...anchorFor(k1, k2), sequence_policy: "window" });
    expect((await app.verify(await bodyFor(k2, { sequence: 5 }))).body.valid).toBe(true);
  });

  it("unpinning a key drops its window: pinned again, it starts afresh", async () => {
    const app = h();
    const k1 = await keyOf("unpin-window");
    const k2 = await keyOf("unpin-window", "k2");
    await app.pin({ ...anchorFor(k1), sequence_policy: "window" });
    expect((await app.verify(await bodyFor(k1, { sequence: MAX_SEQUENCE }))).body.valid).toBe(true);
    await app.pin({ ...anchorFor(k2), sequence_policy: "window" });
    await app.pin({ ...anchorFor(k1, k2), sequence_policy: "window" });
    expect((await app.verify(await bodyFor(k1, { sequence: 5 }))).body.valid).toBe(true);
  });
});

describe("audited sequence reset", () => {
  it("clears the sequences a sharded key noted in every shard (4), so a refused sequence passes again", async () => {
    const app = h();
    const k1 = await keyOf("reset-sharded");
    await app.pin({ ...anchorFor(k1), ledger_shards: 4 });
    const shardKey = new TextEncoder().encode(env.LEDGER_SHARD_KEY);
    // Note sequence 4242 in every shard; another receipt with it is then refused in that shard.
    const noted = new Set<string>();
    for (let i = 0; noted.size < 4; i++) {
      const body = await bodyFor(k1, { sequence: 4242 });
      const shard = ledgerName(k1.issuer, body.receipt.nonce, 4, shardKey);
      const res = await app.verify(body);
      if (!noted.has(shard)) expect(res.body.valid).toBe(true);
      else expect(codes(res)).toEqual(["REPLAY_DETECTED"]);
      noted.add(shard);
    }
    const reset = await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1", reason: "sequence reused after an issuer restore" });
    expect(reset.status).toBe(200);
    expect(reset.body.previous_highest).toBe(4242);
    const again = await Promise.all(Array.from({ length: 6 }, async () => app.verify(await bodyFor(k1, { sequence: 4242 }))));
    expect(again.filter((r) => r.body.valid).length).toBeGreaterThan(0);
  });

  for (const shards of [1]) {
    it(`clears a key's window in every shard (${shards}) and records who, when, why and the previous highest`, async () => {
      const app = h();
      const k1 = await keyOf(`reset-${shards}`);
      await app.pin({ ...anchorFor(k1), sequence_policy: "window", ledger_shards: shards });
      // Windows are per shard: lock every shard with a sequence near 2^53-1.
      const shardKey = new TextEncoder().encode(env.LEDGER_SHARD_KEY);
      const lockedShards = new Set<string>();
      for (let i = 0; lockedShards.size < shards; i++) {
        const body = await bodyFor(k1, { sequence: MAX_SEQUENCE - i });
        expect((await app.verify(body)).body.valid).toBe(true);
        lockedShards.add(ledgerName(k1.issuer, body.receipt.nonce, shards, shardKey));
      }
      const locked = await Promise.all(Array.from({ length: 6 }, async (_, i) => app.verify(await bodyFor(k1, { sequence: 7 + i }))));
      expect(locked.every((r) => codes(r).join() === "REPLAY_DETECTED")).toBe(true);
      const reset = await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1", reason: "issuer signed a bogus sequence" });
      expect(reset.status).toBe(200);
      const fingerprint = (await app.call(issuerPath(k1.issuer))).body.keys[0].fingerprint;
      const entry = { fingerprint, kid: "k1", at: TEST_NOW, reason: "issuer signed a bogus sequence", by: "admin", previous_highest: MAX_SEQUENCE };
      expect(reset.body).toEqual({ issuer: k1.issuer, ...entry });
      const after = await Promise.all(Array.from({ length: 6 }, async (_, i) => app.verify(await bodyFor(k1, { sequence: 7 + i }))));
      expect(after.every((r) => r.body.valid)).toBe(true);
      expect((await app.call(issuerPath(k1.issuer))).body).toMatchObject({ sequence_resets: [entry], sequence_resets_total: 1, sequence_resets_next_cursor: null });
    });
  }

  it("the issuer view lists the newest SEQUENCE_RESETS_PAGE resets with their total and a cursor; the cursor answers the older rest; a bad cursor is 400", async () => {
    const app = h();
    const k1 = await keyOf("reset-paged");
    await app.pin(anchorFor(k1));
    const n = SEQUENCE_RESETS_PAGE + 1;
    for (let i = 0; i < n; i++) expect((await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1", reason: `restore ${i}` })).status).toBe(200);
    // Every reset has the same time (the harness's clock): the order they were recorded in tells them apart.
    const first = await app.call(issuerPath(k1.issuer));
    expect(first.status).toBe(200);
    expect(first.body.sequence_resets.map((r: { reason: string }) => r.reason)).toEqual(Array.from({ length: SEQUENCE_RESETS_PAGE }, (_, i) => `restore ${i + 1}`));
    expect(first.body.sequence_resets_total).toBe(n);
    expect(first.body.sequence_resets_next_cursor).toMatch(new RegExp(`^${TEST_NOW}_2\\.[0-9a-f]{32}$`));
    const older = await app.call(`${issuerPath(k1.issuer)}?resets_cursor=${encodeURIComponent(first.body.sequence_resets_next_cursor)}`);
    expect(older.status).toBe(200);
    expect(older.body).toMatchObject({ sequence_resets_total: n, sequence_resets_next_cursor: null, keys: first.body.keys, revoked: [] });
    expect(older.body.sequence_resets).toEqual([{ fingerprint: first.body.keys[0].fingerprint, kid: "k1", at: TEST_NOW, reason: "restore 0", by: "admin", previous_highest: null }]);
    for (const bad of ["", "abc", `${TEST_NOW}`, `${TEST_NOW}_0`, `${TEST_NOW}_01`, `0${TEST_NOW}_2`, `${TEST_NOW}.0_2`, "Infinity_2", `${TEST_NOW}_2_3`, `-1_2`, `${TEST_NOW}_99999999999999999`]) {
      const res = await app.call(`${issuerPath(k1.issuer)}?resets_cursor=${encodeURIComponent(bad)}`);
      expect([bad, res.status, res.body.error.code]).toEqual([bad, 400, "MALFORMED_REQUEST"]);
    }
    // Review rv-99: a well-formed position no answer gave was read (each new one an uncached ledger
    // read on this public route); a cursor carries a MAC over the issuer and the position now.
    const mac = first.body.sequence_resets_next_cursor.split(".")[1];
    for (const madeUp of [`${TEST_NOW}_2`, `${TEST_NOW}_3.${mac}`, `${TEST_NOW}_2.${"0".repeat(32)}`, `${TEST_NOW}_2.${mac.toUpperCase()}`]) {
      const res = await app.call(`${issuerPath(k1.issuer)}?resets_cursor=${encodeURIComponent(madeUp)}`);
      expect([madeUp, res.status, res.body.error.code]).toEqual([madeUp, 400, "MALFORMED_REQUEST"]);
    }
    const other = await keyOf("reset-paged-other");
    await app.pin(anchorFor(other));
    const elsewhere = await app.call(`${issuerPath(other.issuer)}?resets_cursor=${encodeURIComponent(first.body.sequence_resets_next_cursor)}`);
    expect([elsewhere.status, elsewhere.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    const twice = await app.call(`${issuerPath(k1.issuer)}?resets_cursor=${TEST_NOW}_2&resets_cursor=${TEST_NOW}_3`);
    expect([twice.status, twice.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    expect((await app.call(`${issuerPath(k1.issuer)}?cursor=${TEST_NOW}_2`)).status).toBe(400);
  });

  it("refuses a reset without a reason (400 MALFORMED_REQUEST) or of a key not pinned now (404 NOT_FOUND)", async () => {
    const app = h();
    const k1 = await keyOf("reset-refused");
    await app.pin(anchorFor(k1));
    expect((await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1" })).body.error.code).toBe("MALFORMED_REQUEST");
    // Review rv-98: a reason of a NUL or of a zero-width space was recorded as if it said something.
    // Review rv-99: a bidirectional control (U+202E) reordered how the audit entry reads, and a line
    // or paragraph separator broke it over lines; a zero-width joiner inside an emoji stays a reason.
    for (const reason of [" ", "\u0000", "\u200b", "\u200b\u00a0", "restored\u0000", "line\nbreak", "x".repeat(513), "a\u202eevil", "a\u2066b", "a\u200fb", "a\u2028b", "a\u2029b"]) {
      const refused = await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1", reason });
      expect([refused.status, refused.body.error.code], JSON.stringify(reason)).toEqual([400, "MALFORMED_REQUEST"]);
    }
    for (const reason of ["é", "#", "x".repeat(512), "restored after a backup 😀", "family 👨\u200d👩\u200d👧"]) expect((await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k1", reason })).status, reason).toBe(200);
    const unknown = await app.admin("POST", "/v1/admin/anchors/reset-sequence", { issuer: k1.issuer, kid: "k9", reason: "x" });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "NOT_FOUND"]);
    const unauthenticated = await app.call("/v1/admin/anchors/reset-sequence", { method: "POST", body: JSON.stringify({ issuer: k1.issuer, kid: "k1", reason: "x" }) });
    expect(unauthenticated.status).toBe(401);
  });
});

describe("revocation is by key, not by label", () => {
  it("a revoked key cannot be pinned again under a new kid (409 ANCHOR_KEY_REVOKED); a new key can", async () => {
    const app = h();
    const k1 = await keyOf("repin-new-kid");
    await app.pin(anchorFor(k1));
    expect((await app.revoke(k1.issuer, "k1")).status).toBe(200);
    const renamed = await app.pin(anchorFor({ ...k1, kid: "k1-renamed" }));
    expect([renamed.status, renamed.body.error.code]).toEqual([409, "ANCHOR_KEY_REVOKED"]);
    expect(codes(await app.verify(await bodyFor(k1)))).toEqual(["ANCHOR_REVOKED"]);
    const fresh = await keyOf("repin-new-kid", "k2");
    expect((await app.pin(anchorFor(fresh))).status).toBe(200);
    expect((await app.verify(await bodyFor(fresh))).body.valid).toBe(true);
  });

  it("a key revoked for one issuer cannot be pinned for another (global record)", async () => {
    const app = h();
    const k1 = await keyOf("revoked-elsewhere");
    await app.pin(anchorFor(k1));
    expect((await app.revoke(k1.issuer, "k1")).status).toBe(200);
    const other = await app.pin(anchorFor({ ...k1, issuer: "https://keys-another-issuer.example" }));
    expect([other.status, other.body.error.code]).toEqual([409, "ANCHOR_KEY_REVOKED"]);
  });

  it("the same key pinned under two kids is refused under both once one kid is revoked", async () => {
    const app = h();
    const k1 = await keyOf("twice");
    const honest = await keyOf("twice", "k3");
    await app.pin(anchorFor(k1, { ...k1, kid: "k2" }, honest));
    expect((await app.revoke(k1.issuer, "k2")).status).toBe(200);
    expect(codes(await app.verify(await bodyFor(k1)))).toEqual(["ANCHOR_REVOKED"]);
    const shown = (await app.call(issuerPath(k1.issuer))).body;
    expect(shown.keys.map((k: any) => [k.kid, k.revoked])).toEqual([["k1", true], ["k2", true], ["k3", false]]);
    expect((await app.verify(await bodyFor(honest))).body.valid).toBe(true);
  });

  it("a rotated-out key can still be revoked, by kid or by fingerprint, and then never pinned again", async () => {
    const app = h();
    const k1 = await keyOf("rotated-out");
    const k2 = await keyOf("rotated-out", "k2");
    const k3 = await keyOf("rotated-out", "k3");
    const first = await app.pin(anchorFor(k1, k3));
    await app.pin(anchorFor(k2));
    const shown = (await app.call(issuerPath(k1.issuer))).body;
    expect(shown.previous_keys.map((k: any) => [k.kid, k.revoked])).toEqual([["k1", false], ["k3", false]]);
    expect((await app.revoke(k1.issuer, "k1")).body).toMatchObject({ kid: "k1", fingerprint: first.body.keys[0].fingerprint });
    const byFingerprint = await app.admin("POST", "/v1/admin/anchors/revoke", { issuer: k1.issuer, fingerprint: first.body.keys[1].fingerprint });
    expect(byFingerprint.body).toMatchObject({ kid: "k3", revoked_at: TEST_NOW });
    for (const id of [k1, k3]) expect((await app.pin(anchorFor(k2, id))).body.error.code).toBe("ANCHOR_KEY_REVOKED");
    expect((await app.verify(await bodyFor(k2))).body.valid).toBe(true);
  });

  it("refuses a revocation naming neither or both of kid and fingerprint, or a malformed fingerprint", async () => {
    const app = h();
    const k1 = await keyOf("revoke-body");
    await app.pin(anchorFor(k1));
    for (const body of [{ issuer: k1.issuer }, { issuer: k1.issuer, kid: "k1", fingerprint: "0".repeat(64) }, { issuer: k1.issuer, fingerprint: "XYZ" }]) {
      const res = await app.admin("POST", "/v1/admin/anchors/revoke", body);
      expect([res.status, res.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    }
    expect((await app.admin("POST", "/v1/admin/anchors/revoke", { issuer: k1.issuer, fingerprint: "0".repeat(64) })).status).toBe(404);
  });
});

describe("not_after is judged at verification time too", () => {
  it("a receipt issued inside its key's window but verified after not_after is UNTRUSTED_ISSUER; before, it passes", async () => {
    const app = h();
    const k1 = await keyOf("not-after");
    await app.pin({ ...anchorFor(k1), keys: [{ ...anchorFor(k1).keys[0], not_after: TEST_NOW - 2 }] });
    const body = await bodyFor(k1, { issuedAt: TEST_NOW - 5 });
    const late = await app.verify(body);
    expect(codes(late)).toEqual(["UNTRUSTED_ISSUER"]);
    expect(late.body.failures[0].detail).toMatch(/not_after/);
    expect(late.body.nonce_consumed).toBe(false);
    const inTime = await app.verify({ receipt: body.receipt, audience: AUDIENCE, mode: "audit", at: TEST_NOW - 2 });
    expect(inTime.body.valid).toBe(true);
  });
});
