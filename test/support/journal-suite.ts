/**
 * One suite for every adapter of the ToolReceiptJournal port: every result kind of every
 * operation, the strict boundary at entry, redacted extensions and all-or-nothing batches. The
 * memory adapter runs it under Node, the Durable Object adapter in the workers pool.
 */
import { describe, expect, it } from "vitest";
import { JournalInputError } from "../../worker/protocol/journal/core.js";
import type { ToolReceiptJournal } from "../../worker/protocol/journal/port.js";

type Async<T> = { [K in keyof T]: T[K] extends (...a: infer A) => infer R ? (...a: A) => Promise<Awaited<R>> : never };
export type AnyJournal = Async<ToolReceiptJournal>;

const AT = 1_900_000_000;
const DIGEST = "ab".repeat(32);
/** A receipt of the CCS form (not signed by anyone this suite trusts): what an append may record as a receipt. */
export const RECEIPT = {
  action: `ccs:tool-invoke:search_web:${DIGEST}`, audience: "https://relying-party.example", block_reason: "", config_hash: `sha256:${"c".repeat(64)}`,
  expires_at: AT + 300, issued_at: AT, issuer: "https://issuer.example", nonce: "0".repeat(32), params_hash: DIGEST.slice(0, 16), receipt: "1".repeat(32),
  request_hash: `sha256:${"d".repeat(64)}`, rule_summary: "INT-001=allow", signature: "e".repeat(128), timestamp: AT, tool: "search_web",
  trace_id: "00000000000000aa", verdict: "allow", verified_at: AT,
};
let n = 0;
const key = (label: string) => `${label}-${Date.now().toString(36)}-${++n}`;

export function journalPortSuite(adapter: string, make: () => AnyJournal) {
  /** A record driven to `ready` (reserved → awaiting_policy → ready). */
  async function ready(j: AnyJournal) {
    const r = await j.reserve({ idempotency_key: key("ready"), action_digest: "sha256:a", at: AT, attributes: { tool: "search_web" } });
    if (r.kind !== "created") throw new Error(r.kind);
    const a = await j.appendMany({ record_id: r.record.record_id, expected_revision: 1, at: AT, transitions: [{ to: "awaiting_policy", effect: "not-started" }, { to: "ready", effect: "not-started", receipt: RECEIPT }] });
    if (a.kind !== "appended") throw new Error(a.kind);
    return a.record;
  }

  describe(`the journal port (${adapter} adapter)`, () => {
    it("reserve: created, then existing for the same action digest, conflict for another", async () => {
      const j = make();
      const k = key("reserve");
      const created = await j.reserve({ idempotency_key: k, action_digest: "sha256:one", at: AT, attributes: { agent_id: "a" } });
      expect(created).toMatchObject({ kind: "created", record: { state: "reserved", effect: "not-started", revision: 1, idempotency_key: k, attributes: { agent_id: "a" } } });
      expect(await j.reserve({ idempotency_key: k, action_digest: "sha256:one", at: AT + 1 })).toMatchObject({ kind: "existing", record: { revision: 1, created_at: AT } });
      expect(await j.reserve({ idempotency_key: k, action_digest: "sha256:two", at: AT + 1 })).toMatchObject({ kind: "conflict", action_digest: "sha256:one" });
    });

    it("append: appended, revision-conflict, not-found, illegal-transition (an edge or an effect), fence-conflict", async () => {
      const j = make();
      const r = await j.reserve({ idempotency_key: key("append"), action_digest: "d", at: AT });
      if (r.kind !== "created") throw new Error(r.kind);
      const id = r.record.record_id;
      expect(await j.append({ record_id: id, expected_revision: 1, at: AT, to: "awaiting_policy", effect: "not-started" })).toMatchObject({ kind: "appended", record: { state: "awaiting_policy", revision: 2 } });
      expect(await j.append({ record_id: id, expected_revision: 1, at: AT, to: "ready", effect: "not-started" })).toEqual({ kind: "revision-conflict", expected: 1, actual: 2 });
      expect(await j.append({ record_id: "0".repeat(32), expected_revision: 1, at: AT, to: "ready", effect: "not-started" })).toEqual({ kind: "not-found" });
      expect(await j.append({ record_id: id, expected_revision: 2, at: AT, to: "succeeded", effect: "applied" })).toMatchObject({ kind: "illegal-transition", from: "awaiting_policy", to: "succeeded" });
      expect(await j.append({ record_id: id, expected_revision: 2, at: AT, to: "ready", effect: "applied" })).toMatchObject({ kind: "illegal-transition", from: "awaiting_policy", to: "ready", effect: "applied" });
      const rec = await ready(j);
      const claimed = await j.claim({ record_id: rec.record_id, at: AT, lease_seconds: 60 });
      if (claimed.kind !== "claimed") throw new Error(claimed.kind);
      expect(await j.append({ record_id: rec.record_id, expected_revision: claimed.record.revision, at: AT, to: "succeeded", effect: "applied" })).toEqual({ kind: "fence-conflict", fence: null, current: 1 });
      expect(await j.append({ record_id: rec.record_id, expected_revision: claimed.record.revision, at: AT, fence: 7, to: "succeeded", effect: "applied" })).toEqual({ kind: "fence-conflict", fence: 7, current: 1 });
      expect(await j.append({ record_id: rec.record_id, expected_revision: claimed.record.revision, at: AT, fence: 1, to: "succeeded", effect: "applied" })).toMatchObject({ kind: "appended", record: { state: "succeeded", effect: "applied", lease: null, outcome_status: "confirmed" } });
    });

    it("append cannot skip the lease: ready → started is illegal-transition; a receipt not of the CCS form is MALFORMED_REQUEST", async () => {
      const j = make();
      const rec = await ready(j);
      expect(await j.append({ record_id: rec.record_id, expected_revision: rec.revision, at: AT, to: "started", effect: "unknown" })).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started" });
      expect(await j.append({ record_id: rec.record_id, expected_revision: rec.revision, at: AT, fence: 1, to: "started", effect: "unknown" })).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started" });
      const forged = await Promise.resolve().then(() => j.append({ record_id: rec.record_id, expected_revision: rec.revision, at: AT, to: "cancelled_before_start", effect: "not-started", receipt: { verdict: "deny" } })).catch((e) => e);
      expect(forged).toBeInstanceOf(JournalInputError);
      expect((forged as JournalInputError).code).toBe("MALFORMED_REQUEST");
      expect(await j.load(rec.record_id)).toMatchObject({ kind: "found", record: { state: "ready", verdict: "allow", revision: rec.revision } });
      const claimed = await j.claim({ record_id: rec.record_id, at: AT, lease_seconds: 60 });
      expect(claimed).toMatchObject({ kind: "claimed", fence: 1 });
      expect(await j.append({ record_id: rec.record_id, expected_revision: rec.revision + 1, at: AT, fence: 1, to: "succeeded", effect: "applied", receipt: { ...RECEIPT, response_hash: `sha256:${"f".repeat(64)}` } })).toMatchObject({ kind: "appended", record: { state: "succeeded", verdict: "allow" } });
    });

    it("appendMany is all or none", async () => {
      const j = make();
      const r = await j.reserve({ idempotency_key: key("many"), action_digest: "d", at: AT });
      if (r.kind !== "created") throw new Error(r.kind);
      const id = r.record.record_id;
      expect(await j.appendMany({ record_id: id, expected_revision: 1, at: AT, transitions: [{ to: "awaiting_policy", effect: "not-started" }, { to: "started", effect: "unknown" }] })).toMatchObject({ kind: "illegal-transition", from: "awaiting_policy", to: "started" });
      expect(await j.load(id)).toMatchObject({ kind: "found", record: { state: "reserved", revision: 1 } });
    });

    it("claim: claimed with strictly increasing fences, held, not-eligible, revision-conflict, not-found", async () => {
      const j = make();
      const rec = await ready(j);
      expect(await j.claim({ record_id: rec.record_id, expected_revision: 1, at: AT, lease_seconds: 60 })).toEqual({ kind: "revision-conflict", expected: 1, actual: 3 });
      const first = await j.claim({ record_id: rec.record_id, expected_revision: 3, at: AT, lease_seconds: 60 });
      expect(first).toMatchObject({ kind: "claimed", fence: 1, lease_until: AT + 60, record: { state: "started", effect: "unknown", outcome_status: "dispatched" } });
      expect(await j.claim({ record_id: rec.record_id, at: AT, lease_seconds: 60 })).toEqual({ kind: "held", lease_until: AT + 60 });
      expect(await j.claim({ record_id: "f".repeat(32), at: AT, lease_seconds: 60 })).toEqual({ kind: "not-found" });
      const denied = await j.reserve({ idempotency_key: key("denied"), action_digest: "d", at: AT });
      if (denied.kind !== "created") throw new Error(denied.kind);
      await j.append({ record_id: denied.record.record_id, expected_revision: 1, at: AT, to: "denied", effect: "not-started" });
      expect(await j.claim({ record_id: denied.record.record_id, at: AT, lease_seconds: 60 })).toEqual({ kind: "not-eligible", state: "denied", lease_lapsed: false });
      const again = await ready(j);
      const f1 = await j.claim({ record_id: again.record_id, at: AT, lease_seconds: 60 });
      expect(f1).toMatchObject({ kind: "claimed", fence: 1 });
    });

    it("two claims race: exactly one is claimed", async () => {
      const j = make();
      const rec = await ready(j);
      const results = await Promise.all([0, 1].map(() => j.claim({ record_id: rec.record_id, expected_revision: rec.revision, at: AT, lease_seconds: 60 })));
      expect(results.filter((r) => r.kind === "claimed")).toHaveLength(1);
      expect(results.map((r) => r.kind).sort()).toEqual(["claimed", "revision-conflict"]);
    });

    it("verifyFence: valid for the holder, fence-conflict for any other, not-found", async () => {
      const j = make();
      const rec = await ready(j);
      await j.claim({ record_id: rec.record_id, at: AT, lease_seconds: 60 });
      expect(await j.verifyFence({ record_id: rec.record_id, fence: 1 })).toMatchObject({ kind: "valid", record: { state: "started" } });
      expect(await j.verifyFence({ record_id: rec.record_id, fence: 2 })).toEqual({ kind: "fence-conflict", fence: 2, current: 1 });
      expect(await j.verifyFence({ record_id: "e".repeat(32), fence: 1 })).toEqual({ kind: "not-found" });
    });

    it("load and loadByIdempotency: found with the ordered history and every receipt, or not-found", async () => {
      const j = make();
      const rec = await ready(j);
      const loaded = await j.load(rec.record_id);
      if (loaded.kind !== "found") throw new Error(loaded.kind);
      expect(loaded.history.map((e) => [e.revision, e.from, e.to])).toEqual([[1, null, "reserved"], [2, "reserved", "awaiting_policy"], [3, "awaiting_policy", "ready"]]);
      expect(loaded.record).toMatchObject({ state: "ready", verdict: "allow", outcome_status: "dispatched" });
      expect(await j.loadByIdempotency(rec.idempotency_key)).toEqual(loaded);
      expect(await j.load("1".repeat(32))).toEqual({ kind: "not-found" });
      expect(await j.loadByIdempotency(key("never"))).toEqual({ kind: "not-found" });
    });

    it("reserve under 50 concurrent calls with one key: exactly one created", async () => {
      const j = make();
      const k = key("concurrent");
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => j.reserve({ idempotency_key: k, action_digest: "d", at: AT + i })));
      expect(results.filter((r) => r.kind === "created")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "existing")).toHaveLength(49);
    });

    it("the strict boundary at entry: prototype keys, accessors, class instances, authority fields and unsafe numbers are refused", async () => {
      const j = make();
      const r = await j.reserve({ idempotency_key: key("strict"), action_digest: "d", at: AT });
      if (r.kind !== "created") throw new Error(r.kind);
      const append = (detail: unknown) => j.append({ record_id: r.record.record_id, expected_revision: 1, at: AT, to: "awaiting_policy", effect: "not-started", detail });
      const accessor = Object.defineProperty({}, "x", { get: () => 1, enumerable: true });
      for (const detail of [JSON.parse('{"__proto__": {"polluted": true}}'), accessor, new Date(), { approval: "yes" }, { n: 2 ** 60 }, { s: "\ud800" }, [1, , 3]]) {
        await expect(Promise.resolve().then(() => append(detail))).rejects.toBeInstanceOf(JournalInputError);
      }
      await expect(Promise.resolve().then(() => j.reserve({ idempotency_key: "", action_digest: "d", at: AT }))).rejects.toBeInstanceOf(JournalInputError);
      expect(await j.load(r.record.record_id)).toMatchObject({ kind: "found", record: { revision: 1 } });
    });

    it("provider extensions: namespaced, credentials redacted before they are stored", async () => {
      const j = make();
      const r = await j.reserve({ idempotency_key: key("ext"), action_digest: "d", at: AT });
      if (r.kind !== "created") throw new Error(r.kind);
      const secrets = ["sk-proj-abcdefghijklmnopqrstuvwxyz0123", "AKIAABCDEFGHIJKLMNOP", "super-secret-value", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "X-Amz-Signature=deadbeef"];
      const extensions = {
        "com.example.provider": {
          requestId: "request_123",
          authorization: "Bearer abc.def",
          headers: { "x-api-key": secrets[2], "content-type": "application/json" },
          notes: [`key ${secrets[0]}`, secrets[1], secrets[3]],
          download: `https://bucket.example/obj?${secrets[4]}&X-Amz-Expires=60`,
        },
      };
      const a = await j.append({ record_id: r.record.record_id, expected_revision: 1, at: AT, to: "awaiting_policy", effect: "not-started", extensions });
      expect(a.kind).toBe("appended");
      const loaded = await j.load(r.record.record_id);
      if (loaded.kind !== "found") throw new Error(loaded.kind);
      const text = JSON.stringify(loaded);
      for (const s of [...secrets, "Bearer abc.def"]) expect(text).not.toContain(s);
      expect(loaded.history[1].extensions).toEqual({
        "com.example.provider": { requestId: "request_123", authorization: "[redacted]", headers: { "x-api-key": "[redacted]", "content-type": "application/json" }, notes: ["[redacted]", "[redacted]", "[redacted]"], download: "[redacted]" },
      });
      // Credentials inside strings and under any credential-like name: URL userinfo goes, the rest of the URL stays;
      // a credential-named pair's value goes, the rest of the string stays; the honest members beside them are kept.
      const more = {
        "com.example.provider": {
          dsn: "https://admin:hunter2@db.example/", db: "postgres://u:p4ss@h/db", plain: "https://db.example/path?x=1",
          log: "connect failed: password=hunter2 user=app", query: "api_key=abc123&page=2", header: "Authorization: Bearer abc.def123 sent",
          cfg: 'cfg {"secret":"s3cr3t","region":"eu"}', shell: "PWD: /home token = t0k3n",
          secretKey: "k1", secret_key: "k2", pwd: "k3", auth: { user: "u", pass: "k4" }, creds: ["k5"], Credentials: "k6", passphrase: "k7", privateKey: "k8", PASSWD: "k9", dbPassword: "k10", oauth: "k11",
          author: "Ada", keyId: "kid-1", passes: 3,
        },
      };
      const b = await j.append({ record_id: r.record.record_id, expected_revision: 2, at: AT, to: "ready", effect: "not-started", extensions: more });
      expect(b.kind).toBe("appended");
      const again = await j.load(r.record.record_id);
      if (again.kind !== "found") throw new Error(again.kind);
      for (const s of ["hunter2", "p4ss", "abc123", "abc.def123", "s3cr3t", "t0k3n", ...Array.from({ length: 11 }, (_, i) => `"k${i + 1}"`)]) expect(JSON.stringify(again)).not.toContain(s);
      expect(again.history[2].extensions).toEqual({
        "com.example.provider": {
          dsn: "https://[redacted]@db.example/", db: "postgres://[redacted]@h/db", plain: "https://db.example/path?x=1",
          log: "connect failed: password=[redacted] user=app", query: "api_key=[redacted]&page=2", header: "Authorization: [redacted] sent",
          cfg: 'cfg {"secret":"[redacted]","region":"eu"}', shell: "PWD: [redacted] token = [redacted]",
          secretKey: "[redacted]", secret_key: "[redacted]", pwd: "[redacted]", auth: "[redacted]", creds: "[redacted]", Credentials: "[redacted]", passphrase: "[redacted]", privateKey: "[redacted]", PASSWD: "[redacted]", dbPassword: "[redacted]", oauth: "[redacted]",
          author: "Ada", keyId: "kid-1", passes: 3,
        },
      });
      const refused = async (ext: unknown) => {
        const err = await Promise.resolve().then(() => j.append({ record_id: r.record.record_id, expected_revision: 3, at: AT, to: "denied", effect: "not-started", extensions: ext })).catch((e) => e);
        expect(err).toBeInstanceOf(JournalInputError);
        expect((err as JournalInputError).code).toBe("EXTENSION_INVALID");
      };
      await refused({ provider: { a: 1 } });
      await refused({ "com.example": { a: 1 } });
      await refused({ "com.example.x": "not an object" });
      await refused({ "com.example.x": { payment: { card: "4111" } } });
      await refused({ "com.example.x": JSON.parse('{"__proto__": {"x": 1}}') });
    });
  });
}
