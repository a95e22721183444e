/**
 * The receipt journal on Durable Objects: the shared port suite on the DO adapter, two-phase
 * receipts through the routes (admission durable before the answer, idempotent intake, fenced
 * finalisation, a lapsed lease reported unknown across a restart and then reconciled), the
 * evidence store and its paging over 1,000 records, the port routes per relying party, who may
 * call what, and the rows written per finalised receipt.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, createExecutionContext, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigurationError, journalShards, leaseSeconds } from "../../worker/config.js";
import { durableJournalStub, INTAKE_TENANT, journalClient, journalObjectName } from "../../worker/journal-store.js";
import { recordIdOf } from "../../worker/protocol/journal/core.js";
import { jcs, prefixedDigest } from "../../worker/protocol/digest.js";
import { PROJECTED_ATTRIBUTES, type ProjectedAttributes } from "../../worker/protocol/observability.js";
import { ADMIN_TOKEN, AUDIENCE, harness, INTAKE_TOKEN, RP_TOKEN, TEST_NOW, type Harness } from "../support/app-harness.js";
import { journalPortSuite } from "../support/journal-suite.js";

journalPortSuite("Durable Object", () => journalClient(durableJournalStub(env), "port-suite", 4, 10_000).port);

const ctx = () => createExecutionContext();
let traces = 0;
const trace = () => (0xa000 + ++traces).toString(16).padStart(16, "0");
const command = (extra: Record<string, unknown> = {}) => ({
  intake_version: "1.3", agent_id: "journal-agent", tool: "search_web", params: { query: "weather in Tokyo" }, timestamp: TEST_NOW - 1, trace_id: trace(), ...extra,
});
const requestOf = (c: Record<string, any>) => ({ agent_id: c.agent_id, tool: c.tool, params: c.params, timestamp: c.timestamp, trace_id: c.trace_id });
const shardOfTrace = (traceId: string) => env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(journalObjectName(INTAKE_TENANT, recordIdOf(traceId), journalShards(env))));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
const post = (path: string, body: unknown, token = INTAKE_TOKEN) =>
  h.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: token ? `Bearer ${token}` : "" }, body: JSON.stringify(body) });
const evidence = (traceId: string, token = INTAKE_TOKEN) => h.call(`/v1/evidence/${traceId}`, { headers: { authorization: token ? `Bearer ${token}` : "" } });
const start = (traceId: string, body: unknown = {}) => post(`/v1/receipts/${traceId}/start`, body);
const finalize = (traceId: string, body: unknown) => post(`/v1/receipts/${traceId}/finalize`, body);
const reconcile = (traceId: string, body: unknown, token = INTAKE_TOKEN) => post(`/v1/receipts/${traceId}/reconcile`, body, token);
/** A trace admitted, started with a 0.1 s lease and lapsed by its shard's alarm; its trace_id. */
const lapsedTrace = async () => {
  const c = command();
  await h.intake(c);
  expect((await start(c.trace_id, { lease_seconds: 0.1 })).status).toBe(200);
  await sleep(200);
  await runDurableObjectAlarm(shardOfTrace(c.trace_id));
  return c.trace_id;
};
const sequenceNow = async () => {
  const doc = await h.call("/.well-known/ccs-issuer");
  const fingerprint = doc.body.keys[0].fingerprint as string;
  return env.ISSUING_SEQUENCE.get(env.ISSUING_SEQUENCE.idFromName(fingerprint)).current();
};

beforeAll(async () => {
  h = harness(env, ctx());
  const doc = await h.call("/.well-known/ccs-issuer");
  expect((await h.pin(doc.body)).status).toBe(200);
});

describe("admission, durable before the answer", () => {
  it("an allow admission is in the evidence store even when every object is aborted right after the answer", async () => {
    const c = command();
    const admitted = await h.intake(c);
    expect(admitted.status).toBe(200);
    await abortAllDurableObjects();
    const e = await evidence(c.trace_id);
    expect(e.status).toBe(200);
    expect(e.body.record).toMatchObject({ state: "ready", effect: "not-started", outcome_status: "dispatched", verdict: "allow", revision: 3, attributes: { trace_id: c.trace_id, agent_id: "journal-agent", tool: "search_web" } });
    expect(e.body.history.map((x: any) => x.to)).toEqual(["reserved", "awaiting_policy", "ready"]);
    expect(e.body.receipts).toEqual([admitted.body.receipt]);
  });

  it("a deny is final at admission: denied, confirmed, and it cannot be started", async () => {
    const c = command({ tool: "shell_exec", params: { command: "rm -rf /" } });
    const admitted = await h.intake(c);
    expect(admitted.body.receipt.verdict).toBe("deny");
    const e = await evidence(c.trace_id);
    expect(e.body.record).toMatchObject({ state: "denied", effect: "not-started", outcome_status: "confirmed", verdict: "deny" });
    expect(e.body.receipts[0].response_hash).toBe("");
    const s = await start(c.trace_id);
    expect(s.status).toBe(409);
    expect(s.body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
  });

  it("the same intake again answers the same admission, with no second sequence number or nonce; another Command under its trace_id is refused", async () => {
    const c = command();
    const first = await h.intake(c);
    const before = await sequenceNow();
    const again = await h.intake(c);
    expect(again.status).toBe(200);
    expect(again.body.receipt).toEqual(first.body.receipt);
    expect(again.body.idempotent_replay).toBe(true);
    expect(await sequenceNow()).toBe(before);
    const other = await h.intake({ ...c, params: { query: "weather in Osaka" } });
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: "INTAKE_TRACE_CONFLICT", retry: "MUST NOT", trace_id: c.trace_id });
    expect(await sequenceNow()).toBe(before);
  });

  it("concurrent retries of one intake answer one admission", async () => {
    const c = command();
    const answers = await Promise.all(Array.from({ length: 10 }, () => h.intake(c)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.body.receipt.nonce)).size).toBe(1);
    expect((await evidence(c.trace_id)).body.receipts).toHaveLength(1);
  });

  it("a Command lacking its approval awaits it (a deny with a challenge, not final); the approval comes through the challenge, not a second intake", async () => {
    const c = command({ tool: "drop_table", params: { table: "sessions" } });
    const first = await h.intake(c);
    expect(first.body.receipt.verdict).toBe("deny");
    expect(first.body.challenge.missing[0].evidence).toBe("human_approval");
    expect((await evidence(c.trace_id)).body.record).toMatchObject({ state: "awaiting_approval", outcome_status: "confirmed" });
    const { prefixedDigest, jcs } = await import("../../worker/protocol/digest.js");
    const approval = { approver: "ops@example.org", request_hash: await prefixedDigest(jcs(requestOf(c))) };
    // The same intake with the approval is a retry of the deny: the deadline and answered-once rule live on the challenge.
    const again = await h.intake({ ...c, human_approval: approval });
    expect(again.body).toMatchObject({ idempotent_replay: true, receipt: { verdict: "deny", nonce: first.body.receipt.nonce } });
    const answered = await h.call(`/v1/intake/${c.trace_id}/evidence`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: JSON.stringify({ human_approval: approval }) });
    expect(answered.body.receipt.verdict).toBe("allow");
    const e = await evidence(c.trace_id);
    expect(e.body.record.state).toBe("ready");
    expect(e.body.history.map((x: any) => x.to)).toEqual(["reserved", "awaiting_policy", "awaiting_approval", "ready"]);
    expect((await start(c.trace_id)).status).toBe(200);
  });

  it("an admission past its window (expires_at + skew) is not started: the record is closed as expired; at the last instant it still starts", async () => {
    const late = (seconds: number) => {
      const at = harness(env, ctx(), { now: () => TEST_NOW + seconds });
      return (traceId: string) => at.call(`/v1/receipts/${traceId}/start`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: "{}" });
    };
    const stale = command();
    const admitted = (await h.intake(stale)).body.receipt;
    expect([admitted.issued_at, admitted.expires_at]).toEqual([TEST_NOW, TEST_NOW + 60]);
    const refused = await late(91)(stale.trace_id);
    expect([refused.status, refused.body.error.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    expect(refused.body.error.detail).toMatch(/expired at/);
    const e = await evidence(stale.trace_id);
    expect(e.body.record.state).toBe("expired");
    expect(e.body.history.at(-1)).toMatchObject({ from: "ready", to: "expired", detail: { admission_expired_at: TEST_NOW + 60 } });
    // Closed: a start on time afterwards finds nothing to start either.
    expect((await start(stale.trace_id)).body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
    const edge = command();
    await h.intake(edge);
    expect((await late(90)(edge.trace_id)).status).toBe(200);
  });

  it("an escalation (SEC-002, a removal that depends on a variable) moves on with an approval of its own request; another request's approval signs nothing", async () => {
    const c = command({ tool: "shell_exec", params: { cmd: 'rm -rf "$BUILD_DIR/out"' } });
    const first = await h.intake(c);
    expect(first.body.receipt.verdict).toBe("escalate");
    expect((await evidence(c.trace_id)).body.record.state).toBe("awaiting_approval");
    const { prefixedDigest, jcs } = await import("../../worker/protocol/digest.js");
    const requestHash = await prefixedDigest(jcs(requestOf(c)));
    expect(first.body.receipt.request_hash).toBe(requestHash);
    const before = await sequenceNow();
    // An approval of another request is a retry of the escalation: no new receipt, no new sequence.
    for (const approver of ["a@example.org", "b@example.org"]) {
      const stray = await h.intake({ ...c, human_approval: { approver, request_hash: `sha256:${"ab".repeat(32)}` } });
      expect(stray.body).toMatchObject({ idempotent_replay: true, receipt: { verdict: "escalate", nonce: first.body.receipt.nonce } });
    }
    expect(await sequenceNow()).toBe(before);
    const approved = await h.intake({ ...c, human_approval: { approver: "ops@example.org", request_hash: requestHash } });
    expect(approved.body.idempotent_replay).not.toBe(true);
    expect(approved.body.receipt).toMatchObject({ verdict: "allow", request_hash: requestHash });
    const e = await evidence(c.trace_id);
    expect(e.body.record.state).toBe("ready");
    expect(e.body.history.map((x: any) => x.to)).toEqual(["reserved", "awaiting_policy", "awaiting_approval", "ready"]);
    // Approved once: another approval of the same request is a retry of the allow.
    const again = await h.intake({ ...c, human_approval: { approver: "other@example.org", request_hash: requestHash } });
    expect(again.body).toMatchObject({ idempotent_replay: true, receipt: { nonce: approved.body.receipt.nonce } });
    expect((await start(c.trace_id)).status).toBe(200);
  });
});

describe("execution: start, finalise, reconcile", () => {
  it("two different finalisations racing on one execution: one is recorded, the other is told the record changed under it (JOURNAL_REVISION_CONFLICT) and loads it again, never a second outcome", async () => {
    const seen = new Set<string>();
    // Both calls load the record at one revision, judge and sign, then append with that revision:
    // the second append finds the first's and is refused. Bounded: a few traces until the race is seen.
    for (let round = 0; round < 6 && !seen.has("JOURNAL_REVISION_CONFLICT"); round++) {
      const c = command();
      await h.intake(c);
      expect((await start(c.trace_id)).status).toBe(200);
      const answers = await Promise.all([finalize(c.trace_id, { fence: 1, response: { results: ["sunny"] } }), finalize(c.trace_id, { fence: 1, response: { results: ["rain"] } })]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const refused = answers.find((a) => a.status === 409)!;
      expect(["JOURNAL_REVISION_CONFLICT", "ALREADY_FINALISED"]).toContain(refused.body.error.code);
      seen.add(refused.body.error.code);
      const e = await evidence(c.trace_id);
      expect(e.body.history.filter((x: any) => x.to === "succeeded")).toHaveLength(1);
      const won = answers.find((a) => a.status === 200)!;
      expect(e.body.receipts.at(-1)).toEqual(won.body.receipt);
    }
    expect([...seen]).toContain("JOURNAL_REVISION_CONFLICT");
  });

  it("start claims with a fence; finalise signs the final receipt once, which the verifier accepts; a second finalise answers the same receipt", async () => {
    const c = command();
    await h.intake(c);
    const s = await start(c.trace_id);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ trace_id: c.trace_id, fence: 1, state: "started", lease_until: TEST_NOW + 300 });
    const response = { results: ["sunny", 24] };
    const f = await finalize(c.trace_id, { fence: 1, response });
    expect(f.status).toBe(200);
    expect(f.body).toMatchObject({ state: "succeeded", effect: "applied", outcome_status: "confirmed", receipt: { verdict: "allow", trace_id: c.trace_id } });
    const { prefixedDigest, jcs } = await import("../../worker/protocol/digest.js");
    expect(f.body.receipt.response_hash).toBe(await prefixedDigest(jcs(response)));
    const again = await finalize(c.trace_id, { fence: 1, response });
    expect(again.body).toMatchObject({ idempotent_replay: true, receipt: f.body.receipt });
    expect((await finalize(c.trace_id, { fence: 1, response: { results: ["rain"] } })).body.error.code).toBe("ALREADY_FINALISED");
    expect((await finalize(c.trace_id, { fence: 2, response })).body.error.code).toBe("FENCE_CONFLICT");
    const v = await h.verify({ receipt: f.body.receipt, audience: AUDIENCE, request: requestOf(c), response, mode: "audit" });
    expect(v.body).toMatchObject({ valid: true, enforcement: { outcome_status: "confirmed" } });
    const e = await evidence(c.trace_id);
    expect(e.body.receipts).toHaveLength(2);
    expect(e.body.history.map((x: any) => [x.event, x.to])).toEqual([["reserve", "reserved"], ["append", "awaiting_policy"], ["append", "ready"], ["claim", "started"], ["append", "succeeded"]]);
  });

  it("start takes no body at all as {} (the default lease); a body that is not JSON is still 400", async () => {
    const startRaw = (traceId: string, init: RequestInit) => h.call(`/v1/receipts/${traceId}/start`, { method: "POST", ...init, headers: { authorization: `Bearer ${INTAKE_TOKEN}`, ...(init.headers as Record<string, string>) } });
    const c = command();
    await h.intake(c);
    const bare = await startRaw(c.trace_id, {});
    expect(bare.status).toBe(200);
    expect(bare.body).toMatchObject({ state: "started", fence: 1, lease_until: TEST_NOW + leaseSeconds(env) });
    const c2 = command();
    await h.intake(c2);
    expect((await startRaw(c2.trace_id, { headers: { "content-type": "application/json" }, body: "" })).status).toBe(200);
    const c3 = command();
    await h.intake(c3);
    for (const body of [" ", "null", "[]"]) {
      const r = await startRaw(c3.trace_id, { headers: { "content-type": "application/json" }, body });
      expect([r.status, r.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    }
  });

  it("two starts race: one holds the lease, the other is EXECUTION_HELD", async () => {
    const c = command();
    await h.intake(c);
    const [a, b] = await Promise.all([start(c.trace_id), start(c.trace_id)]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect([a, b].find((r) => r.status === 409)!.body.error.code).toBe("EXECUTION_HELD");
  });

  it("a finalise with a stale fence is refused, and an error result is failed_after_start with its own receipt", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    const stale = await finalize(c.trace_id, { fence: 5, error: { message: "timeout" } });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("FENCE_CONFLICT");
    const f = await finalize(c.trace_id, { fence: 1, error: { message: "upstream 502" }, effect: "none" });
    expect(f.body).toMatchObject({ state: "failed_after_start", effect: "none", outcome_status: "confirmed" });
    expect(f.body.receipt.response_hash).toMatch(/^sha256:/);
  });

  it("an admission survives a restart between intake and finalise: the lapsed lease is unknown, the old fence is refused, and it is reconcilable", async () => {
    const c = command();
    await h.intake(c);
    const s = await start(c.trace_id, { lease_seconds: 0.2 });
    expect(s.status).toBe(200);
    await abortAllDurableObjects();
    await sleep(300);
    // The alarm may already have fired on its own after the restart; if it is still pending, run it now.
    await runDurableObjectAlarm(shardOfTrace(c.trace_id));
    const e = await evidence(c.trace_id);
    expect(e.body.record).toMatchObject({ state: "started", effect: "unknown", outcome_status: "unknown", lease: null, lease_lapsed: true });
    expect(e.body.history.at(-1)).toMatchObject({ event: "lapse", from: "started", to: "started", at: s.body.lease_until });
    expect((await finalize(c.trace_id, { fence: 1, response: { late: true } })).body.error.code).toBe("FENCE_CONFLICT");
    expect((await start(c.trace_id)).body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
    const r = await reconcile(c.trace_id, { response: { late: true }, reason: "tool log shows completion" }, ADMIN_TOKEN);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ state: "succeeded", outcome_status: "confirmed", receipt: { verdict: "allow" } });
    expect((await reconcile(c.trace_id, { response: { late: true }, reason: "tool log shows completion" })).body).toMatchObject({ idempotent_replay: true, receipt: r.body.receipt });
    // The operator's reason is evidence of the reconciliation: the entry keeps it.
    expect((await evidence(c.trace_id)).body.history.at(-1)).toMatchObject({ event: "append", from: "started", to: "succeeded", detail: { reason: "tool log shows completion" } });
  });

  it("a reconciliation's reason is kept in its entries with credentials redacted; none is kept when none is given", async () => {
    const one = await lapsedTrace();
    const r = await reconcile(one, { outcome: "reconciliation_required", reason: "no tool log; retried with password=hunter2 at https://admin:pw@db.example/" }, ADMIN_TOKEN);
    expect(r.status, r.text).toBe(200);
    const e = await evidence(one);
    const reasons = e.body.history.slice(-2).map((x: any) => x.detail.reason);
    expect(reasons).toEqual(Array(2).fill("no tool log; retried with password=[redacted] at https://[redacted]@db.example/"));
    expect(e.text).not.toMatch(/hunter2|admin:pw/);
    const two = await lapsedTrace();
    expect((await reconcile(two, { outcome: "indeterminate" })).status).toBe(200);
    expect((await evidence(two)).body.history.at(-1).detail).not.toHaveProperty("reason");
  });

  it("a reconciliation's reason is at most 1,024 characters counted as UTF-16 code units: 513 emoji (1,026) are refused, 512 (1,024) taken", async () => {
    const emoji = "\u{1F600}";
    const one = await lapsedTrace();
    const over = await reconcile(one, { outcome: "reconciliation_required", reason: emoji.repeat(513) }, ADMIN_TOKEN);
    expect([over.status, over.body.error?.code], over.text).toEqual([400, "MALFORMED_REQUEST"]);
    expect(over.body.error.detail).toContain("1024 characters");
    expect((await evidence(one)).body.record).toMatchObject({ state: "started", lease_lapsed: true });
    expect((await reconcile(one, { outcome: "reconciliation_required", reason: "x".repeat(1025) }, ADMIN_TOKEN)).status).toBe(400);
    const at = await reconcile(one, { outcome: "reconciliation_required", reason: emoji.repeat(512) }, ADMIN_TOKEN);
    expect(at.status, at.text).toBe(200);
  });

  it("a lapsed lease reconciled as reconciliation_required goes there through indeterminate, in one step; indeterminate alone is a reconciliation too", async () => {
    const lapsed = async () => {
      const traceId = await lapsedTrace();
      expect((await evidence(traceId)).body.record).toMatchObject({ state: "started", lease_lapsed: true, outcome_status: "unknown" });
      return traceId;
    };
    const one = await lapsed();
    const r = await reconcile(one, { outcome: "reconciliation_required", reason: "no tool log" }, ADMIN_TOKEN);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ state: "reconciliation_required", effect: "unknown", outcome_status: "indeterminate", receipt: null });
    const e = await evidence(one);
    expect(e.body.history.slice(-2).map((x: { from: string; to: string }) => [x.from, x.to])).toEqual([["started", "indeterminate"], ["indeterminate", "reconciliation_required"]]);
    expect((await reconcile(one, { outcome: "reconciliation_required", reason: "no tool log" })).body).toMatchObject({ state: "reconciliation_required", idempotent_replay: true });
    expect((await reconcile(one, { response: {} })).body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
    // An effect neither step can carry refuses both, and nothing is written.
    const two = await lapsed();
    const bad = await reconcile(two, { outcome: "reconciliation_required", effect: "applied" });
    expect([bad.status, bad.body.error.code]).toEqual([409, "ILLEGAL_TRANSITION"]);
    expect((await evidence(two)).body.record).toMatchObject({ state: "started", lease_lapsed: true });
    expect((await reconcile(two, { outcome: "indeterminate" })).body).toMatchObject({ state: "indeterminate", outcome_status: "indeterminate" });
    expect((await reconcile(two, { outcome: "reconciliation_required" })).body).toMatchObject({ state: "reconciliation_required" });
  });

  it("an indeterminate outcome has no final receipt and can be reconciled as reconciliation_required", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    const f = await finalize(c.trace_id, { fence: 1, outcome: "indeterminate" });
    expect(f.body).toMatchObject({ state: "indeterminate", effect: "unknown", outcome_status: "indeterminate", receipt: null });
    expect((await reconcile(c.trace_id, { outcome: "indeterminate" })).body.error.code).toBe("ILLEGAL_TRANSITION");
    expect((await reconcile(c.trace_id, { outcome: "reconciliation_required" })).body).toMatchObject({ state: "reconciliation_required" });
    expect((await reconcile(c.trace_id, { response: {} })).body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
  });

  it("after a configuration change (a deploy, a re-key) an old admission is not started, and an execution started before it is refused at finalise with 409, not 500, before a sequence number is spent; its outcome is recorded unsigned", async () => {
    const ready = command();
    const running = command();
    expect((await h.intake(ready)).body.receipt.verdict).toBe("allow");
    const admitted = await h.intake(running);
    expect((await start(running.trace_id)).status).toBe(200);
    // The same bindings under another canonical configuration (here the policy floor's; a new SIGNING_KID or RULES does the same).
    const changed = harness({ ...env, POLICY_FLOOR_REQUIRES_PROFILE: "true" } as typeof env, ctx());
    const config = await changed.call("/v1/config");
    expect(config.body.config_hash).not.toBe(admitted.body.receipt.config_hash);
    const call = (path: string, body: unknown, token = INTAKE_TOKEN) =>
      changed.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });

    const s = await call(`/v1/receipts/${ready.trace_id}/start`, {});
    expect([s.status, s.body.error?.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    expect(s.body.error.detail).toMatch(/another|configuration/);
    expect((await evidence(ready.trace_id)).body.record).toMatchObject({ state: "ready", revision: 3 });

    const before = await sequenceNow();
    for (const body of [{ fence: 1, response: { results: ["sunny"] } }, { fence: 1, error: { message: "x" } }]) {
      const f = await call(`/v1/receipts/${running.trace_id}/finalize`, body);
      expect([f.status, f.body.error?.code], f.text).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    }
    expect(await sequenceNow()).toBe(before);
    expect((await evidence(running.trace_id)).body.record).toMatchObject({ state: "started", lease_lapsed: false });
    const indeterminate = await call(`/v1/receipts/${running.trace_id}/finalize`, { fence: 1, outcome: "indeterminate" });
    expect(indeterminate.body).toMatchObject({ state: "indeterminate", receipt: null });
    const signed = await call(`/v1/receipts/${running.trace_id}/reconcile`, { response: {} }, ADMIN_TOKEN);
    expect([signed.status, signed.body.error?.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    expect((await call(`/v1/receipts/${running.trace_id}/reconcile`, { outcome: "reconciliation_required" }, ADMIN_TOKEN)).body).toMatchObject({ state: "reconciliation_required", receipt: null });
  });

  it("extensions that fit beside the admission but not beside the final receipt and its rules' results are refused before a sequence number is spent", async () => {
    // Before, the check before signing judged the step with the admission standing in for the
    // final receipt and no rules' results: extensions just under that bound passed it and were
    // refused by the journal after signing, each such call spending a sequence number (review rv-60).
    const attempt = async (n: number) => {
      const c = command();
      await h.intake(c);
      await start(c.trace_id);
      const before = await sequenceNow();
      const res = await finalize(c.trace_id, { fence: 1, response: { ok: true }, extensions: { "com.example.pad": { p: "x".repeat(n) } } });
      if (res.status !== 200) {
        expect([n, res.status, res.body.error?.detail]).toEqual([n, 400, "receipt, detail and extensions exceed 32768 bytes"]);
        expect([n, await sequenceNow()]).toEqual([n, before]);
        expect((await evidence(c.trace_id)).body.record).toMatchObject({ state: "started" });
      }
      return res.status === 200;
    };
    let [lo, hi] = [20_000, 33_000];
    expect(await attempt(lo)).toBe(true);
    expect(await attempt(hi)).toBe(false);
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (await attempt(mid)) lo = mid;
      else hi = mid;
    }
  });

  it("a final receipt whose clock falls on a later millisecond than its draft's still fits the step sized: the clock is read once (review rv-65)", async () => {
    // Before, the draft and the receipt signed each read the clock: a draft on a whole second
    // (four time fields without decimals) sized the step 16 bytes short of a receipt signed at
    // .123, and the journal refused that one after its sequence number and signature were spent.
    const reads: number[] = [];
    const h2 = harness(env, ctx(), { intake: { now: () => reads.shift() ?? TEST_NOW } });
    const post2 = (path: string, body: unknown) =>
      h2.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: JSON.stringify(body) });
    const pad = (n: number) => ({ "com.example.pad": { p: "x".repeat(n) } });
    // The step a draft on a whole second with the largest sequence number would be, with a pad of 1.
    const probe = command();
    await h2.intake(probe);
    await post2(`/v1/receipts/${probe.trace_id}/start`, {});
    const small = await post2(`/v1/receipts/${probe.trace_id}/finalize`, { fence: 1, response: { ok: true }, extensions: pad(1) });
    expect(small.status).toBe(200);
    const draft = { ...small.body.receipt, sequence: Number.MAX_SAFE_INTEGER };
    const detail = { outcome_call: { via: "finalize", digest: `sha256:${"0".repeat(64)}`, fence: 1 }, rules: small.body.rules };
    const size = new TextEncoder().encode(jcs({ receipt: draft, detail, extensions: pad(1) })).byteLength;
    const n = 32768 - size + 1; // that draft is exactly 32768 bytes
    const c = command();
    await h2.intake(c);
    await post2(`/v1/receipts/${c.trace_id}/start`, {});
    const before = await sequenceNow();
    reads.push(TEST_NOW, TEST_NOW + 0.123); // the first read on a whole second, any later one not
    const res = await post2(`/v1/receipts/${c.trace_id}/finalize`, { fence: 1, response: { ok: true }, extensions: pad(n) });
    expect([res.status, res.body.error?.detail ?? null, await sequenceNow()]).toEqual([200, null, before + 1]);
    expect(res.body.receipt).toMatchObject({ issued_at: TEST_NOW, sequence: before + 1 });
  });

  it("bad calls are 400 with a code, never 5xx; unknown traces 404", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    expect((await finalize(c.trace_id, { fence: 1 })).body.error.code).toBe("MALFORMED_REQUEST");
    expect((await finalize(c.trace_id, { fence: 1, response: 1, error: 2 })).body.error.code).toBe("MALFORMED_REQUEST");
    expect((await finalize(c.trace_id, { fence: 1, response: {}, effect: "sideways" })).body.error.code).toBe("MALFORMED_REQUEST");
    expect((await finalize("NOT-HEX", { fence: 1, response: {} })).status).toBe(400);
    // Refused before a sequence number and a signature are spent on it.
    const before = await sequenceNow();
    expect((await finalize(c.trace_id, { fence: 1, response: {}, effect: "compensated" })).body.error.code).toBe("ILLEGAL_TRANSITION");
    expect((await finalize(c.trace_id, { fence: 1, error: { message: "x" }, effect: "applied" })).body.error.code).toBe("ILLEGAL_TRANSITION");
    // So are extensions the journal refuses: out of form, or over a step's 32 KiB on their own.
    expect((await finalize(c.trace_id, { fence: 1, response: {}, extensions: { openai: { id: "x" } } })).body.error.code).toBe("EXTENSION_INVALID");
    const big = await finalize(c.trace_id, { fence: 1, response: {}, extensions: { "com.example.big": { blob: "x".repeat(40_000) } } });
    expect([big.status, big.body.error?.code, big.body.error?.detail]).toEqual([400, "MALFORMED_REQUEST", "receipt, detail and extensions exceed 32768 bytes"]);
    expect(await sequenceNow()).toBe(before);
    expect((await evidence(c.trace_id)).body.record).toMatchObject({ state: "started" });
    expect((await finalize(c.trace_id, { fence: 1, response: {}, extensions: { "com.example.small": { id: "x" } } })).body).toMatchObject({ state: "succeeded" });
    expect(await sequenceNow()).toBe(before + 1);
    expect((await start("00000000000000ff")).status).toBe(404);
    expect((await evidence("00000000000000ff")).status).toBe(404);
  });

  it("content_type, outcome_status and declared come only with a response or an error: beside an outcome nothing would judge them, so they are 400, not silently dropped", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    for (const extra of [{ outcome_status: "succeeded" }, { content_type: "text/html" }, { declared: { max_size: 1 } }]) {
      const f = await finalize(c.trace_id, { fence: 1, outcome: "indeterminate", ...extra });
      expect([f.status, f.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
      const r = await reconcile(c.trace_id, { outcome: "reconciliation_required", ...extra });
      expect([r.status, r.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    }
    expect((await finalize(c.trace_id, { fence: 1, outcome: "indeterminate" })).status).toBe(200);
    const judged = await reconcile(c.trace_id, { response: { ok: true }, outcome_status: "succeeded", content_type: "application/json" });
    expect(judged.status).toBe(200);
    expect(judged.body.rules.find((r: { name: string }) => r.name === "OUT-007").verdict).toBe("deny");
  });

  it("OUT-007 judges the outcome_status a finalise reports: outside the closed enum the final receipt is a deny; inside it, or absent, an allow; not a string, 400", async () => {
    const finalised = async (extra: Record<string, unknown>) => {
      const c = command();
      await h.intake(c);
      await start(c.trace_id);
      return finalize(c.trace_id, { fence: 1, response: { results: ["sunny"] }, ...extra });
    };
    const bad = await finalised({ outcome_status: "succeeded" });
    expect(bad.status).toBe(200);
    expect(bad.body.receipt).toMatchObject({ verdict: "deny", block_reason: 'OUT-007: outcome_status "succeeded" is outside the closed enum' });
    expect(bad.body.receipt.rule_summary).toContain("|OUT-007=deny|");
    for (const extra of [{ outcome_status: "confirmed" }, { outcome_status: "indeterminate" }, {}]) {
      const ok = await finalised(extra);
      expect([ok.status, ok.body.receipt.verdict]).toEqual([200, "allow"]);
      expect(ok.body.receipt.rule_summary).toContain("|OUT-007=allow|");
    }
    expect((await finalised({ outcome_status: 7 })).body.error.code).toBe("MALFORMED_REQUEST");
  });

  it("provider extensions on finalise: smuggled credentials never reach the evidence store, an unnamespaced one is EXTENSION_INVALID", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    const secret = "sk-live-0123456789abcdefghijklmnop";
    const refused = await finalize(c.trace_id, { fence: 1, response: {}, extensions: { openai: { id: "x" } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("EXTENSION_INVALID");
    const f = await finalize(c.trace_id, {
      fence: 1, response: {},
      extensions: { "com.example.provider": { request_id: "req_1", Authorization: `Bearer ${secret}`, signed: "https://storage.example/x?X-Goog-Signature=abcd", echo: secret } },
    });
    expect(f.status).toBe(200);
    const e = await evidence(c.trace_id);
    expect(e.text).not.toContain(secret);
    expect(e.text).not.toContain("X-Goog-Signature");
    expect(e.body.history.at(-1).extensions).toEqual({ "com.example.provider": { request_id: "req_1", Authorization: "[redacted]", signed: "[redacted]", echo: "[redacted]" } });
  });

  it("the digest kept of an outcome call is of the call as recorded: a redacted credential cannot be guessed back from it", async () => {
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    const sent = { fence: 1, outcome: "indeterminate", extensions: { "com.example.db": { password: "hunter2" } } };
    expect((await finalize(c.trace_id, sent)).status).toBe(200);
    const entry = (await evidence(c.trace_id)).body.history.at(-1);
    expect(entry.extensions).toEqual({ "com.example.db": { password: "[redacted]" } });
    // Before: the SHA-256 of the call as sent, so a dictionary run over the evidence found "hunter2".
    expect(entry.detail.outcome_call.digest).not.toBe(await prefixedDigest(jcs(sent)));
    expect(entry.detail.outcome_call.digest).toBe(await prefixedDigest(jcs({ ...sent, extensions: entry.extensions })));
    // The same call again is still the same call.
    expect((await finalize(c.trace_id, sent)).body).toMatchObject({ state: "indeterminate", idempotent_replay: true });
    // And a reconciliation's reason likewise.
    const why = { response: { ok: true }, reason: "db password=hunter2 rotated" };
    expect((await reconcile(c.trace_id, why)).status).toBe(200);
    const last = (await evidence(c.trace_id)).body.history.at(-1);
    expect(last.detail.reason).toBe("db password=[redacted] rotated");
    expect(last.detail.outcome_call.digest).not.toBe(await prefixedDigest(jcs(why)));
    expect((await reconcile(c.trace_id, why)).body).toMatchObject({ state: "succeeded", idempotent_replay: true });
  });
});

describe("who may call", () => {
  it("lifecycle routes take the intake token; the evidence store and reconcile take intake or admin; a relying party may not read evidence", async () => {
    const c = command();
    await h.intake(c);
    for (const token of ["", RP_TOKEN, ADMIN_TOKEN]) {
      expect((await post(`/v1/receipts/${c.trace_id}/start`, {}, token)).status).toBe(401);
      expect((await post(`/v1/receipts/${c.trace_id}/finalize`, { fence: 1, response: {} }, token)).status).toBe(401);
    }
    for (const token of ["", RP_TOKEN]) {
      expect((await evidence(c.trace_id, token)).status).toBe(401);
      expect((await h.call("/v1/evidence", { headers: { authorization: token ? `Bearer ${token}` : "" } })).status).toBe(401);
      expect((await reconcile(c.trace_id, { response: {} }, token)).status).toBe(401);
    }
    expect((await evidence(c.trace_id, ADMIN_TOKEN)).status).toBe(200);
    expect((await post("/v1/journal/reserve", { idempotency_key: "k", action_digest: "d" }, "")).status).toBe(401);
    expect((await post("/v1/journal/reserve", { idempotency_key: "k", action_digest: "d" }, INTAKE_TOKEN)).status).toBe(401);
  });

  it("unauthenticated calls write nothing to any journal shard", async () => {
    const count = async () => {
      let total = 0;
      for (let i = 0; i < journalShards(env); i++) total += (await env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(`${INTAKE_TENANT}#${i}`)).stats()).entries;
      return total;
    };
    const before = await count();
    const c = command();
    await h.call("/v1/intake", { method: "POST", headers: { authorization: "Bearer nope" }, body: JSON.stringify(c) });
    await post(`/v1/receipts/${c.trace_id}/start`, {}, "");
    await post("/v1/journal/reserve", { idempotency_key: "anon", action_digest: "d" }, "");
    expect(await count()).toBe(before);
  });
});

describe("recovery from the stored history", () => {
  it("a reordered or altered history in SQLite is refused on load, never reinterpreted", async () => {
    const port = journalClient(durableJournalStub(env), "corruption", 1, 10_000).port;
    const stub = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName("corruption#0"));
    const make = async (key: string) => {
      const r = await port.reserve({ idempotency_key: key, action_digest: "d", at: TEST_NOW });
      if (r.kind !== "created") throw new Error(r.kind);
      await port.appendMany({ record_id: r.record.record_id, expected_revision: 1, at: TEST_NOW, transitions: [{ to: "awaiting_policy", effect: "not-started" }, { to: "ready", effect: "not-started" }] });
      return r.record.record_id;
    };
    const reordered = await make("reordered");
    const altered = await make("altered");
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const [two, three] = [2, 3].map((rev) => sql.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? AND revision = ?", reordered, rev).one().entry);
      sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = 2", three, reordered);
      sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = 3", two, reordered);
      const entry = JSON.parse(sql.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? AND revision = 3", altered).one().entry);
      sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = 3", JSON.stringify({ ...entry, to: "awaiting_approval" }), altered);
    });
    expect(await port.load(reordered)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/out of order/) });
    expect(await port.load(altered)).toMatchObject({ kind: "corrupt" });
    expect(await port.claim({ record_id: altered, at: TEST_NOW, lease_seconds: 10 })).toMatchObject({ kind: "corrupt" });
  });
});

describe("the latest entry and the index row's head", () => {
  it("an altered latest entry in SQLite is refused; a table from before the head column is migrated and its rows read as before", async () => {
    const port = journalClient(durableJournalStub(env), "head", 1, 10_000).port;
    const stub = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName("head#0"));
    const r = await port.reserve({ idempotency_key: "head-1", action_digest: "d", at: TEST_NOW, attributes: { invocation_id: "inv-1" } });
    if (r.kind !== "created") throw new Error(r.kind);
    const id = r.record.record_id;
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const entry = JSON.parse(sql.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? AND revision = 1", id).one().entry);
      entry.detail.attributes.invocation_id = "inv-2";
      sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = 1", JSON.stringify(entry), id);
    });
    // Before the head digest this loaded as found, naming inv-2.
    expect(await port.load(id)).toMatchObject({ kind: "corrupt", reason: expect.stringMatching(/latest entry/) });

    // A shard written before the column: no head, read as before; the next write sets it.
    const old = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName("old-head#0"));
    const oldPort = journalClient(durableJournalStub(env), "old-head", 1, 10_000).port;
    const o = await oldPort.reserve({ idempotency_key: "old-1", action_digest: "d", at: TEST_NOW });
    if (o.kind !== "created") throw new Error(o.kind);
    await runInDurableObject(old, (_instance, state) => {
      state.storage.sql.exec("ALTER TABLE records DROP COLUMN head");
    });
    await abortAllDurableObjects();
    expect(await oldPort.load(o.record.record_id)).toMatchObject({ kind: "found", record: { revision: 1 } });
    expect(await oldPort.append({ record_id: o.record.record_id, expected_revision: 1, at: TEST_NOW, to: "awaiting_policy", effect: "not-started" })).toMatchObject({ kind: "appended" });
    const again = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName("old-head#0"));
    const head = await runInDurableObject(again, (_instance, state) => state.storage.sql.exec<{ head: string | null }>("SELECT head FROM records WHERE record_id = ?", o.record.record_id).one().head);
    expect(head).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("the /v1/journal port routes", () => {
  it("answer each port result by kind, in the calling relying party's own journal", async () => {
    const rp = (path: string, body: unknown) => post(`/v1/journal/${path}`, body, RP_TOKEN);
    const created = await rp("reserve", { idempotency_key: "order-42", action_digest: "sha256:x", attributes: { tool: "pay" } });
    expect(created.body).toMatchObject({ kind: "created", record: { state: "reserved" } });
    const id = created.body.record.record_id;
    expect((await rp("reserve", { idempotency_key: "order-42", action_digest: "sha256:x" })).body.kind).toBe("existing");
    expect((await rp("reserve", { idempotency_key: "order-42", action_digest: "sha256:y" })).body.kind).toBe("conflict");
    // Attributes the boundary refuses (an authority field, a prototype key) are a 400, never a 500, and reserve nothing.
    for (const attributes of [{ password: "x" }, { approved: true }, JSON.parse('{"x":{"__proto__":1}}')]) {
      const refused = await rp("reserve", { idempotency_key: "order-43", action_digest: "sha256:x", attributes });
      expect([refused.status, refused.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    }
    expect((await rp("load-by-idempotency", { idempotency_key: "order-43" })).body.kind).toBe("not-found");
    expect((await rp("append", { record_id: id, expected_revision: 1, to: "awaiting_policy", effect: "not-started" })).body.kind).toBe("appended");
    expect((await rp("append", { record_id: id, expected_revision: 2, to: "started", effect: "unknown" })).body).toMatchObject({ kind: "illegal-transition", from: "awaiting_policy", to: "started" });
    const forged = await rp("append", { record_id: id, expected_revision: 2, to: "ready", effect: "not-started", receipt: { verdict: "allow" } });
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe("MALFORMED_REQUEST");
    expect((await rp("append", { record_id: id, expected_revision: 2, to: "ready", effect: "not-started" })).body.kind).toBe("appended");
    // Only a claim enters started: an append from ready is illegal, fence or no fence.
    expect((await rp("append", { record_id: id, expected_revision: 3, to: "started", effect: "unknown" })).body).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started" });
    expect((await rp("append", { record_id: id, expected_revision: 3, fence: 1, to: "started", effect: "unknown" })).body).toMatchObject({ kind: "illegal-transition", from: "ready", to: "started" });
    expect((await rp("load", { record_id: id })).body).toMatchObject({ kind: "found", record: { state: "ready", verdict: null, revision: 3 } });
    const claimed = await rp("claim", { record_id: id, lease_seconds: 60 });
    expect(claimed.body).toMatchObject({ kind: "claimed", fence: 1 });
    expect((await rp("claim", { record_id: id })).body.kind).toBe("held");
    expect((await rp("verify-fence", { record_id: id, fence: 1 })).body.kind).toBe("valid");
    expect((await rp("verify-fence", { record_id: id, fence: 9 })).body.kind).toBe("fence-conflict");
    expect((await rp("append", { record_id: id, expected_revision: 4, to: "succeeded", effect: "applied" })).body.kind).toBe("fence-conflict");
    expect((await rp("append", { record_id: id, expected_revision: 4, fence: 1, to: "succeeded", effect: "applied" })).body.kind).toBe("appended");
    expect((await rp("load", { record_id: id })).body).toMatchObject({ kind: "found", record: { state: "succeeded", revision: 5 } });
    expect((await rp("load-by-idempotency", { idempotency_key: "order-42" })).body).toMatchObject({ kind: "found", record: { record_id: id } });
    expect((await rp("load", { record_id: "0".repeat(32) })).body.kind).toBe("not-found");
    expect((await rp("append", { record_id: id, expected_revision: 5, to: "compensation_required", effect: "applied", detail: { password: "x" } })).body.error.code).toBe("MALFORMED_REQUEST");
    // The intake journal is another tenant: the same key is unknown there.
    const local = journalClient(durableJournalStub(env), INTAKE_TENANT, journalShards(env), 10_000).port;
    expect((await local.loadByIdempotency("order-42")).kind).toBe("not-found");
  });

  it("a lease past its lease_until holds no fence, though the alarm has not lapsed it yet: verify-fence, a late append and a late finalise are refused", async () => {
    const at = (seconds: number) => {
      const later = harness(env, ctx(), { now: () => TEST_NOW + seconds });
      return (path: string, body: unknown, token = RP_TOKEN) => later.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    };
    const rp = (path: string, body: unknown) => post(`/v1/journal/${path}`, body, RP_TOKEN);
    const id = (await rp("reserve", { idempotency_key: "late-fence", action_digest: "d" })).body.record.record_id;
    await rp("append", { record_id: id, expected_revision: 1, to: "awaiting_policy", effect: "not-started" });
    await rp("append", { record_id: id, expected_revision: 2, to: "ready", effect: "not-started" });
    expect((await rp("claim", { record_id: id, lease_seconds: 60 })).body).toMatchObject({ kind: "claimed", fence: 1, lease_until: TEST_NOW + 60 });
    // Sixty-one seconds on (the test clock); the alarm, armed on the real clock a minute ahead, has not run.
    const late = at(61);
    expect((await late("/v1/journal/verify-fence", { record_id: id, fence: 1 })).body).toEqual({ kind: "fence-conflict", fence: 1, current: null });
    expect((await late("/v1/journal/append", { record_id: id, expected_revision: 4, fence: 1, to: "succeeded", effect: "applied" })).body).toEqual({ kind: "fence-conflict", fence: 1, current: null });
    expect((await at(59)("/v1/journal/verify-fence", { record_id: id, fence: 1 })).body.kind).toBe("valid");
    const outcome = await late("/v1/journal/append", { record_id: id, expected_revision: 4, to: "failed_after_start", effect: "unknown" });
    expect(outcome.body).toMatchObject({ kind: "appended", record: { state: "failed_after_start", fence: 2 }, entries: [{ event: "lapse", at: TEST_NOW + 60 }, { event: "append" }] });

    // The intake path: a finalise after lease_until is FENCE_CONFLICT before anything is signed.
    const c = command();
    expect((await h.intake(c)).status).toBe(200);
    expect((await start(c.trace_id, { lease_seconds: 30 })).body).toMatchObject({ fence: 1, lease_until: TEST_NOW + 30 });
    const before = await sequenceNow();
    const finalised = await at(31)(`/v1/receipts/${c.trace_id}/finalize`, { fence: 1, response: { ok: true } }, INTAKE_TOKEN);
    expect([finalised.status, finalised.body.error?.code]).toEqual([409, "FENCE_CONFLICT"]);
    expect(await sequenceNow()).toBe(before);
  });

  it("a reconciliation past lease_until is taken though the alarm has not lapsed the lease yet: the lapse is written first, dated lease_until", async () => {
    const later = (seconds: number) => {
      const h2 = harness(env, ctx(), { now: () => TEST_NOW + seconds });
      return (path: string, body: unknown) => h2.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: JSON.stringify(body) });
    };
    const c = command();
    expect((await h.intake(c)).status).toBe(200);
    expect((await start(c.trace_id, { lease_seconds: 30 })).body).toMatchObject({ fence: 1, lease_until: TEST_NOW + 30 });
    // Still within the lease: refused, the holder finalises it.
    const early = await later(29)(`/v1/receipts/${c.trace_id}/reconcile`, { outcome: "indeterminate" });
    expect([early.status, early.body.error?.code]).toEqual([409, "EXECUTION_HELD"]);
    // Past it (the alarm, armed on the real clock, has not run): the execution is lapsed, and reconcilable.
    const late = await later(31)(`/v1/receipts/${c.trace_id}/reconcile`, { outcome: "reconciliation_required", reason: "runtime lost" });
    expect([late.status, late.body.state]).toEqual([200, "reconciliation_required"]);
    const history = (await evidence(c.trace_id)).body.history as { event: string; to: string; at: number; fence: number | null }[];
    expect(history.slice(-3).map((e) => [e.event, e.to, e.at])).toEqual([["lapse", "started", TEST_NOW + 30], ["append", "indeterminate", TEST_NOW + 31], ["append", "reconciliation_required", TEST_NOW + 31]]);
  });

  it("a prototype key at the top of attributes, detail, receipt or extensions is refused like one deeper, not silently dropped", async () => {
    const rp = (path: string, body: unknown) => post(`/v1/journal/${path}`, body, RP_TOKEN);
    const proto = () => JSON.parse('{"__proto__": {"polluted": true}}');
    const refused = await rp("reserve", { idempotency_key: "order-proto", action_digest: "d", attributes: proto() });
    expect([refused.status, refused.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    expect((await rp("load-by-idempotency", { idempotency_key: "order-proto" })).body.kind).toBe("not-found");
    const id = (await rp("reserve", { idempotency_key: "order-proto-2", action_digest: "d" })).body.record.record_id;
    const step = { record_id: id, expected_revision: 1, to: "awaiting_policy", effect: "not-started" };
    for (const [member, code] of [["detail", "MALFORMED_REQUEST"], ["receipt", "MALFORMED_REQUEST"], ["extensions", "EXTENSION_INVALID"]]) {
      const r = await rp("append", { ...step, [member]: proto() });
      expect([member, r.status, r.body.error?.code]).toEqual([member, 400, code]);
    }
    expect((await rp("load", { record_id: id })).body.record.revision).toBe(1);
    const c = command();
    await h.intake(c);
    await start(c.trace_id);
    const f = await finalize(c.trace_id, { fence: 1, response: {}, extensions: proto() });
    expect([f.status, f.body.error?.code]).toEqual([400, "EXTENSION_INVALID"]);
    expect((await evidence(c.trace_id)).body.record.state).toBe("started");
  });
  it("a reservation is bounded like every other step: idempotency_key, action_digest and attributes at most 32 KiB together", async () => {
    const rp = (path: string, body: unknown) => post(`/v1/journal/${path}`, body, RP_TOKEN);
    // 250 KB of attributes fits the 256 KiB body; it was stored as the reservation's step (and agent_id in the index row).
    for (const attributes of [{ note: "x".repeat(250 * 1024) }, { agent_id: "x".repeat(40 * 1024) }]) {
      const refused = await rp("reserve", { idempotency_key: "order-big", action_digest: "d", attributes });
      expect([refused.status, refused.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
      expect(refused.body.error.detail).toContain("32768 bytes");
    }
    expect((await rp("load-by-idempotency", { idempotency_key: "order-big" })).body.kind).toBe("not-found");
    // Just under the bound is taken.
    const fits = await rp("reserve", { idempotency_key: "order-big", action_digest: "d", attributes: { note: "x".repeat(32 * 1024 - 100) } });
    expect(fits.body.kind).toBe("created");
  });
});

describe("tool execution events", () => {
  it("each step the journal records is projected onto the safe attribute set and exported once, best-effort: an exporter that throws changes no answer and is not retried", async () => {
    // Before, only a stored usage receipt was exported: projectToolExecutionEvent was called by no route.
    const seen: ProjectedAttributes[] = [];
    const context = ctx();
    const x = harness(env, context, {
      exporter: (a) => {
        seen.push(a);
        throw new Error("exporter down");
      },
    });
    // Without a token the harness sends its relying party's (registering it first).
    const send = (path: string, body: unknown, token?: string) => x.call(path, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
    const c = command();
    expect((await x.intake(c)).status).toBe(200);
    expect((await send(`/v1/receipts/${c.trace_id}/start`, {}, INTAKE_TOKEN)).status).toBe(200);
    expect((await send(`/v1/receipts/${c.trace_id}/finalize`, { fence: 1, response: { results: ["sunny"] } }, INTAKE_TOKEN)).status).toBe(200);
    await waitOnExecutionContext(context);
    const id = recordIdOf(c.trace_id);
    expect(seen).toEqual(["reserved", "awaiting_policy", "ready", "started", "succeeded"].map((state, i) => ({
      "event.name": "tool_execution",
      "event.id": `${id}:${i + 1}`,
      "tool.name": "search_web",
      "tool.execution.state": state,
      "tool.execution.effect": state === "succeeded" ? "applied" : state === "started" ? "unknown" : "not-started",
      "tool.execution.journal": "intake",
      trace_id: c.trace_id,
      time: expect.any(Number),
    })));

    // A relying party's own lifecycle through /v1/journal: extensions, details, digests and credentials stay in the journal.
    seen.length = 0;
    const reserved = await send("/v1/journal/reserve", { idempotency_key: "projected-1", action_digest: "sha256:secret-digest", attributes: { tool: "pay", trace_id: "ab".repeat(8), agent_id: "agent-7" } });
    const record = reserved.body.record.record_id as string;
    const appended = await send("/v1/journal/append", { record_id: record, expected_revision: 1, to: "awaiting_policy", effect: "not-started", detail: { note: "d-1" }, extensions: { "com.example.vendor": { request_id: "req-9", api_token: "t-1" } } });
    expect(appended.body.kind).toBe("appended");
    expect((await send("/v1/journal/append", { record_id: record, expected_revision: 2, to: "ready", effect: "not-started" })).body.kind).toBe("appended");
    expect((await send("/v1/journal/claim", { record_id: record, lease_seconds: 60 })).body.kind).toBe("claimed");
    // Nothing recorded, nothing exported: a retried reservation, a held claim.
    expect((await send("/v1/journal/reserve", { idempotency_key: "projected-1", action_digest: "sha256:secret-digest" })).body.kind).toBe("existing");
    expect((await send("/v1/journal/claim", { record_id: record })).body.kind).toBe("held");
    await waitOnExecutionContext(context);
    expect(seen.map((a) => { const t: Record<string, unknown> = { ...a }; return [t["event.id"], t["tool.execution.state"]]; })).toEqual([[`${record}:1`, "reserved"], [`${record}:2`, "awaiting_policy"], [`${record}:3`, "ready"], [`${record}:4`, "started"]]);
    for (const a of seen) expect(Object.keys(a).every((k) => (PROJECTED_ATTRIBUTES as readonly string[]).includes(k))).toBe(true);
    for (const text of ["secret-digest", "d-1", "req-9", "t-1", "com.example", "agent-7"]) expect(JSON.stringify(seen)).not.toContain(text);
    for (const a of seen) expect(a).toMatchObject({ "tool.execution.journal": "relying_party" });
  });

  it("a relying party that reserves an intake's trace_id as its own key cannot export events the deployment's own are taken for (review rv-127)", async () => {
    // A record's id is derived from its idempotency key alone: before, the party's events for that key
    // carried the intake record's very event.id, tool and trace_id, indistinguishable from it in the log.
    const seen: ProjectedAttributes[] = [];
    const context = ctx();
    const x = harness(env, context, { exporter: (a) => void seen.push(a) });
    const c = command();
    expect((await x.intake(c)).status).toBe(200);
    const send = (path: string, body: unknown) => x.call(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await send("/v1/journal/reserve", { idempotency_key: c.trace_id, action_digest: "sha256:x", attributes: { tool: c.tool, trace_id: c.trace_id } })).body.kind).toBe("created");
    await waitOnExecutionContext(context);
    const reserved = seen.filter((a) => "tool.execution.state" in a && a["tool.execution.state"] === "reserved");
    expect(reserved).toHaveLength(2);
    expect(reserved[0]).not.toEqual(reserved[1]);
    expect(reserved.map((a) => ("tool.execution.journal" in a ? a["tool.execution.journal"] : null))).toEqual(["intake", "relying_party"]);
  });
});

describe("journal configuration", () => {
  it("JOURNAL_SHARDS and JOURNAL_LEASE_SECONDS out of range are configuration errors, not quietly replaced", () => {
    const withVars = (vars: Record<string, string>) => ({ ...env, ...vars }) as typeof env;
    expect(leaseSeconds(withVars({ JOURNAL_LEASE_SECONDS: "" }))).toBe(300);
    expect(leaseSeconds(withVars({ JOURNAL_LEASE_SECONDS: "3600" }))).toBe(3600);
    for (const bad of ["0", "3601", "1.5", "x", "-5"]) expect(() => leaseSeconds(withVars({ JOURNAL_LEASE_SECONDS: bad })), bad).toThrow(ConfigurationError);
    expect(() => journalShards(withVars({ JOURNAL_SHARDS: "65" }))).toThrow(ConfigurationError);
  });
});

describe("a relying party's name reused after its deletion", () => {
  it("starts with nothing of the deleted party's: its journal is another tenant's", async () => {
    h = harness(env, ctx());
    const token = (n: number) => `reused-name-token-${n}-0123456789abcdef0123`;
    const register = (n: number) => h.admin("POST", "/v1/admin/relying-parties", { name: "reused-name", audiences: [AUDIENCE], token: token(n) });
    expect((await register(1)).status).toBe(201);
    const reserved = await post("/v1/journal/reserve", { idempotency_key: "secret-idem", action_digest: "d" }, token(1));
    expect(reserved.body.kind).toBe("created");
    expect((await post("/v1/journal/load-by-idempotency", { idempotency_key: "secret-idem" }, token(1))).body.kind).toBe("found");
    expect((await h.admin("DELETE", "/v1/admin/relying-parties/reused-name")).status).toBe(200);
    expect((await register(2)).status).toBe(201);
    expect((await post("/v1/journal/load-by-idempotency", { idempotency_key: "secret-idem" }, token(2))).body.kind).toBe("not-found");
  });
});

describe("a relying party's token replaced in place", () => {
  it("keeps the party's records for the new token and refuses the old one", async () => {
    h = harness(env, ctx());
    const oldToken = "rotated-party-token-old-0123456789abcdef";
    expect((await h.admin("POST", "/v1/admin/relying-parties", { name: "rotated", audiences: [AUDIENCE], token: oldToken })).status).toBe(201);
    expect((await post("/v1/journal/reserve", { idempotency_key: "kept-idem", action_digest: "d" }, oldToken)).body.kind).toBe("created");
    const rotated = await h.admin("POST", "/v1/admin/relying-parties/rotated/token", {});
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ name: "rotated", audiences: [AUDIENCE], token: expect.stringMatching(/^csrp_[A-Za-z0-9_-]{43}$/) });
    expect((await post("/v1/journal/load-by-idempotency", { idempotency_key: "kept-idem" }, rotated.body.token)).body.kind).toBe("found");
    expect((await post("/v1/journal/load-by-idempotency", { idempotency_key: "kept-idem" }, oldToken)).status).toBe(401);
  });
});

describe("the evidence store's query", () => {
  it("pages through 1,000 records in order, each exactly once, with filters and a time range", async () => {
    const port = journalClient(durableJournalStub(env), INTAKE_TENANT, journalShards(env), 30_000).port;
    const base = 2_000_000_000;
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, k) => {
          const i = batch * 50 + k;
          const traceId = (0xb0000 + i).toString(16).padStart(16, "0");
          // Four records share each second, so the order falls back on record_id.
          return port.reserve({ idempotency_key: traceId, action_digest: "d", at: base + Math.floor(i / 4), attributes: { trace_id: traceId, agent_id: i % 2 ? "pager-odd" : "pager-even", tool: "pager" } });
        }),
      );
    }
    const seen: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await h.call(`/v1/evidence?from=${base}&to=${base + 999}&limit=37${cursor ? `&cursor=${cursor}` : ""}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
      expect(page.status).toBe(200);
      expect(page.body.records.length).toBeLessThanOrEqual(37);
      seen.push(...page.body.records);
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(Math.ceil(1000 / 37));
    expect(seen).toHaveLength(1000);
    expect(new Set(seen.map((r) => r.record_id)).size).toBe(1000);
    const sorted = [...seen].sort((a, b) => a.created_at - b.created_at || (a.record_id < b.record_id ? -1 : 1));
    expect(seen.map((r) => r.record_id)).toEqual(sorted.map((r) => r.record_id));
    // A cursor is a position, not a ticket: one written by the caller (base64url of
    // [created_at, record_id]) starts the page right after that position, as the README says.
    const written = btoa(JSON.stringify([seen[499].created_at, seen[499].record_id])).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const resumed = await h.call(`/v1/evidence?from=${base}&to=${base + 999}&limit=2&cursor=${written}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
    expect(resumed.status).toBe(200);
    expect(resumed.body.records.map((r: any) => r.record_id)).toEqual([seen[500].record_id, seen[501].record_id]);
    const odd = await h.call(`/v1/evidence?agent_id=pager-odd&tool=pager&state=reserved&limit=200&from=${base}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
    expect(odd.body.records).toHaveLength(200);
    expect(odd.body.records.every((r: any) => r.agent_id === "pager-odd")).toBe(true);
    const window = await h.call(`/v1/evidence?from=${base + 10}&to=${base + 12}&limit=200`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
    expect(window.body.records).toHaveLength(12);
    expect(window.body.next_cursor).toBeNull();
    for (const bad of ["limit=0", "limit=500", "limit=1e2", "limit=0x10", "limit=%201", "verdict=maybe", "state=nowhere", "cursor=%21%21", "from=yesterday", "colour=red"]) {
      const r = await h.call(`/v1/evidence?${bad}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe("MALFORMED_REQUEST");
    }
    // 1,000 reservations and 28 pages take ~17 s alone here; on a loaded 2-core machine the file's run passed 30 s (review rv-113).
  }, 120_000);

  it("filters by verdict over admitted records", async () => {
    const c = command({ agent_id: "verdict-agent", tool: "shell_exec", params: { command: "rm -rf /" } });
    await h.intake(c);
    const r = await h.call(`/v1/evidence?agent_id=verdict-agent&verdict=deny`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
    expect(r.body.records.map((x: any) => x.trace_id)).toEqual([c.trace_id]);
  });
});

describe("capacity", () => {
  it("rows written per finalised receipt", async () => {
    const c = command();
    const stub = shardOfTrace(c.trace_id);
    const before = (await stub.stats()).rows_written;
    await h.intake(c);
    await start(c.trace_id);
    await finalize(c.trace_id, { fence: 1, response: { ok: true } });
    const written = (await stub.stats()).rows_written - before;
    console.log(JSON.stringify({ rows_written_per_finalised_receipt: written }));
    expect(written).toBe(ROWS_PER_FINALISED_RECEIPT);
  });
});

/** docs/capacity.md states this figure. */
const ROWS_PER_FINALISED_RECEIPT = 14;
