/**
 * The challenge loop through the Worker: an intake that lacks evidence answers a deny receipt with
 * a challenge (what is missing, its form, a derived deadline); evidence in time gives a fresh
 * evaluation of the same Command, late evidence CHALLENGE_EXPIRED, and nothing is ever an allow
 * before the evidence is there.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { IntakeChallenges } from "../../durable-objects/intake-challenges.js";
import type { Env } from "../../worker/env.js";
import { durableJournalStub, type JournalStub } from "../../worker/journal-store.js";
import { recordIdOf } from "../../worker/protocol/journal/core.js";
import type { ProjectedAttributes } from "../../worker/protocol/observability.js";
import { jcs, prefixedDigest } from "../../worker/protocol/digest.js";
import { AUDIENCE, harness, INTAKE_TOKEN, TEST_NOW, type Harness } from "../support/app-harness.js";

const ctx = () => createExecutionContext();
let traces = 0;
const command = (extra: Record<string, unknown> = {}) => ({
  intake_version: "1.3", agent_id: "challenge-agent", tool: "drop_table", params: { table: "sessions" }, timestamp: TEST_NOW - 1, trace_id: (0xc000 + ++traces).toString(16).padStart(16, "0"), ...extra,
});
const requestHash = (c: Record<string, any>) => prefixedDigest(jcs({ agent_id: c.agent_id, tool: c.tool, params: c.params, timestamp: c.timestamp, trace_id: c.trace_id }));
const answer = (h: Harness, traceId: string, evidence: unknown, authorization = `Bearer ${INTAKE_TOKEN}`) =>
  h.call(`/v1/intake/${traceId}/evidence`, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify(evidence) });

const intakeAuth = { authorization: `Bearer ${INTAKE_TOKEN}` };
const challengeObject = (traceId: string) => env.INTAKE_CHALLENGES.get(env.INTAKE_CHALLENGES.idFromName(traceId));
/** The tables an object's SQLite database holds (the runtime's own `_cf_` tables left out). */
const tables = (state: DurableObjectState) =>
  state.storage.sql.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'").toArray().map((r) => r.name);
const startCall = (h: Harness, traceId: string) => h.call(`/v1/receipts/${traceId}/start`, { method: "POST", headers: { ...intakeAuth, "content-type": "application/json" }, body: "{}" });

let h: Harness;
beforeAll(async () => {
  h = harness(env, ctx());
  expect((await h.pin((await h.call("/.well-known/ccs-issuer")).body)).status).toBe(200);
});

describe("a Command lacking evidence", () => {
  it("is a deny receipt with a challenge: which evidence, in which form, expires_at = issued_at + min(base × multiplier, max)", async () => {
    const c = command();
    const r = await h.intake(c);
    expect(r.status).toBe(200);
    expect(r.body.receipt).toMatchObject({ verdict: "deny", block_reason: "evidence_required: human_approval" });
    expect(r.body.receipt.rule_summary).toContain("SEC-005=escalate");
    expect(r.body.receipt.rule_summary).toContain("evidence=deny");
    expect(r.body.challenge).toEqual({
      trace_id: c.trace_id,
      missing: [{ evidence: "human_approval", needed_by: "SEC-005", format: expect.stringContaining("request_hash"), request_hash: await requestHash(c) }],
      issued_at: r.body.receipt.issued_at,
      expires_at: r.body.receipt.issued_at + Math.min(60 * 5, 600),
      respond_to: `/v1/intake/${c.trace_id}/evidence`,
    });
    // The deny is genuine evidence: a relying party verifying it gets a valid deny, never an allow.
    expect((await h.verify({ receipt: r.body.receipt, audience: AUDIENCE, mode: "audit" })).body).toMatchObject({ valid: true, enforcement: { action: "block", verdict: "deny" } });
  });

  it("the deadline follows the challenge policy, capped by max_deadline", async () => {
    const capped = harness({ ...env, CHALLENGE_MAX_DEADLINE: "120" } as Env, ctx());
    const r = await capped.intake(command());
    expect(r.body.challenge.expires_at).toBe(r.body.receipt.issued_at + 120);
  });

  it("a delegated Command's challenge ends when its parent stops verifying, if that comes first: its evidence is judged with the parent", async () => {
    const parent = (await h.intake(command({ tool: "search_web", params: { query: "q" } }))).body.receipt;
    const child = await h.intake(command({ delegation_chain: parent }));
    expect(child.body.receipt).toMatchObject({ verdict: "deny", block_reason: "evidence_required: human_approval" });
    // The parent expires 60 s after it was issued and is granted its 30 s of skew: not the policy's 300 s.
    expect(child.body.challenge.expires_at).toBe(parent.expires_at + 30);
    expect(child.body.challenge.expires_at).toBeLessThan(child.body.receipt.issued_at + 300);
    expect((await runInDurableObject(challengeObject(child.body.receipt.trace_id), async (_o: IntakeChallenges, state) => state.storage.getAlarm()))).toBe((parent.expires_at + 30) * 1000);
  });

  it("a challenge that could not be opened leaves the trace reserved, not awaiting evidence no one can send; the retry opens it", async () => {
    const c = command();
    const broken = harness(env, ctx(), { intake: { openChallenge: () => Promise.reject(new Error("challenge store down")) } });
    const failed = await broken.intake(c);
    // A dependency that failed: 503, as the intake error table says (500 is for a fault of ours).
    expect([failed.status, failed.body.error.code]).toEqual([503, "INTAKE_FAILED"]);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("reserved");
    const retried = await h.intake(c);
    expect(retried.body.challenge.trace_id).toBe(c.trace_id);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    const answered = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect(answered.body.receipt.verdict).toBe("allow");
  });

  it("identical intakes sent at once: the challenge that holds is the one the journal recorded, with the deadline its answer announced (review rv-71)", async () => {
    const c = command();
    // Each attempt signs at its own instant, as attempts sent at once do.
    let tick = 0;
    const racing = harness(env, ctx(), { now: () => TEST_NOW + ++tick / 100 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => racing.intake(c)));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    const fresh = answers.filter((a) => !a.body.idempotent_replay);
    expect(fresh).toHaveLength(1);
    const announced = fresh[0].body.challenge;
    const recorded = (await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body;
    expect(announced.issued_at).toBe(fresh[0].body.receipt.issued_at);
    // An answer that falls short keeps the challenge open until the deadline it holds: the announced one.
    const short = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } });
    expect([short.status, short.body.challenge?.expires_at]).toEqual([200, announced.expires_at]);
    expect(recorded.record.state).toBe("awaiting_approval");
    const stored = await runInDurableObject(challengeObject(c.trace_id), (_o: IntakeChallenges, state) => state.storage.sql.exec<{ issued_at: number; expires_at: number }>("SELECT issued_at, expires_at FROM challenge").one());
    expect(stored).toEqual({ issued_at: announced.issued_at, expires_at: announced.expires_at });
    expect(await runInDurableObject(challengeObject(c.trace_id), (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe(announced.expires_at * 1000);
  });

  it("an attempt that lost the journal's race and opens its challenge late neither moves the recorded deadline nor reopens an answered challenge (review rv-71)", async () => {
    const c = command();
    const first = (await h.intake(c)).body;
    const stub = challengeObject(c.trace_id);
    const late = { message: JSON.stringify({ ...c }), audience: AUDIENCE, gaps: JSON.stringify(first.challenge.missing), issued_at: first.receipt.issued_at + 2, expires_at: first.challenge.expires_at + 2 };
    await runInDurableObject(stub, (o: IntakeChallenges) => o.open(late, "a-later-attempt"));
    const short = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } });
    expect(short.body.challenge.expires_at).toBe(first.challenge.expires_at);
    const right = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect(right.body.receipt.verdict).toBe("allow");
    // Opened again after it was answered: it stays answered, not open to answers the journal refuses.
    await runInDurableObject(stub, (o: IntakeChallenges) => o.open(late, "a-later-attempt"));
    const again = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([again.status, again.body.error?.detail]).toEqual([409, expect.stringMatching(/already answered with its evidence/)]);
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe(first.challenge.expires_at * 1000);
  });

  it("an attempt confirming its own challenge keeps the evidence an answer that fell short brought before the confirmation (review rv-74)", async () => {
    const stub = challengeObject("00000000000c0f17");
    const opened = { message: "{\"trace_id\":\"00000000000c0f17\"}", audience: AUDIENCE, gaps: "[\"human_approval\",\"server_profile\"]", issued_at: TEST_NOW, expires_at: TEST_NOW + 300 };
    await runInDurableObject(stub, (o: IntakeChallenges) => o.open(opened, "attempt-1"));
    // The journal holds the record, an answer brings part of the evidence and is given back, and only then does the attempt confirm.
    expect((await runInDurableObject(stub, (o: IntakeChallenges) => o.take(TEST_NOW + 1))).kind).toBe("open");
    await runInDurableObject(stub, (o: IntakeChallenges) => o.release("[\"server_profile\"]", "{\"trace_id\":\"00000000000c0f17\",\"approved\":true}"));
    await runInDurableObject(stub, (o: IntakeChallenges) => o.confirm(opened, "attempt-1"));
    const row = await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.sql.exec("SELECT gaps, message, state, attempt, confirmed, expires_at FROM challenge").one());
    expect(row).toEqual({ gaps: "[\"server_profile\"]", message: "{\"trace_id\":\"00000000000c0f17\",\"approved\":true}", state: "open", attempt: "attempt-1", confirmed: 1, expires_at: TEST_NOW + 300 });
  });

  it("a challenge stored by the version before attempts were confirmed gains the columns and counts as confirmed", async () => {
    const stub = challengeObject("00000000000a7e11");
    const old = { message: "{\"trace_id\":\"00000000000a7e11\"}", audience: AUDIENCE, gaps: "[]", issued_at: TEST_NOW, expires_at: TEST_NOW + 300 };
    await runInDurableObject(stub, (_o: IntakeChallenges, state) => {
      state.storage.sql.exec("CREATE TABLE challenge (id INTEGER PRIMARY KEY CHECK (id = 1), message TEXT NOT NULL, audience TEXT NOT NULL, gaps TEXT NOT NULL, issued_at REAL NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL)");
      state.storage.sql.exec("INSERT INTO challenge VALUES (1, ?, ?, ?, ?, ?, 'open')", old.message, old.audience, old.gaps, old.issued_at, old.expires_at);
    });
    expect(await runInDurableObject(stub, (o: IntakeChallenges) => o.open({ ...old, expires_at: TEST_NOW + 400 }, "later"))).toBe(false);
    const row = await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.sql.exec("SELECT expires_at, attempt, confirmed FROM challenge").one());
    expect(row).toEqual({ expires_at: TEST_NOW + 300, attempt: null, confirmed: 1 });
  });

  it("a challenge the earlier version opened for an attempt the journal never recorded gives way to the retry the journal records (review rv-75)", async () => {
    // Before the upgrade: an attempt judged, opened its challenge (the earlier version's table, no
    // attempt or confirmed column) and failed before its admission was written, so the trace is at
    // most reserved. Its deadline came with that attempt, 200 s before the retry.
    const c = command();
    const missing = [{ evidence: "human_approval", needed_by: "SEC-005", format: "{\"approver\": …, \"request_hash\": \"<this request_hash>\"}", request_hash: await requestHash(c) }];
    await runInDurableObject(challengeObject(c.trace_id), (_o: IntakeChallenges, state) => {
      state.storage.sql.exec("CREATE TABLE challenge (id INTEGER PRIMARY KEY CHECK (id = 1), message TEXT NOT NULL, audience TEXT NOT NULL, gaps TEXT NOT NULL, issued_at REAL NOT NULL, expires_at REAL NOT NULL, state TEXT NOT NULL)");
      state.storage.sql.exec("INSERT INTO challenge VALUES (1, ?, ?, ?, ?, ?, 'open')", JSON.stringify(c), AUDIENCE, JSON.stringify(missing), TEST_NOW - 200, TEST_NOW + 100);
    });
    // The same intake again, on the new code: the journal records this attempt, which announces its own deadline.
    const retry = (await h.intake(c)).body;
    expect(retry.challenge.expires_at).toBeGreaterThan(TEST_NOW + 200);
    const held = await runInDurableObject(challengeObject(c.trace_id), (_o: IntakeChallenges, state) => state.storage.sql.exec("SELECT issued_at, expires_at, attempt, confirmed FROM challenge").one());
    expect(held).toEqual({ issued_at: retry.challenge.issued_at, expires_at: retry.challenge.expires_at, attempt: retry.receipt.nonce, confirmed: 1 });
    // An answer within the announced deadline, after the abandoned attempt's: judged, not CHALLENGE_EXPIRED.
    const late = harness(env, ctx(), { now: () => TEST_NOW + 200 });
    const answered = await answer(late, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([answered.status, answered.body.receipt?.verdict ?? answered.body.error?.code]).toEqual([200, "allow"]);
  });

  it("an answer whose admission the journal could not record gives the challenge back: the next answer is judged", async () => {
    const c = command();
    expect((await h.intake(c)).body.challenge.trace_id).toBe(c.trace_id);
    const failing = (name: string): JournalStub => {
      const real = durableJournalStub(env)(name);
      // Every read the answer makes goes through; only the write of the admission fails.
      return { ...real, loadByIdempotency: (k: string) => real.loadByIdempotency(k), markOf: (id: string) => real.markOf(id), appendMany: () => Promise.reject(new Error("journal down")) } as unknown as JournalStub;
    };
    const broken = harness(env, ctx(), { journalStub: () => failing });
    const evidence = { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } };
    // A journal that failed is a dependency that failed: 503, nothing recorded.
    const failed = await answer(broken, c.trace_id, evidence);
    expect([failed.status, failed.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    const answered = await answer(h, c.trace_id, evidence);
    expect([answered.status, answered.body.receipt?.verdict]).toEqual([200, "allow"]);
  });

  it("a Command denied on other grounds gets no challenge: evidence could not change it", async () => {
    const r = await h.intake(command({ tool: "shell_exec", params: { cmd: "rm -rf /" } }));
    expect(r.body.receipt.verdict).toBe("deny");
    expect(r.body).not.toHaveProperty("challenge");
  });
});

describe("POST /v1/intake/{trace_id}/evidence", () => {
  it("answered in time: the same Command judged again with the evidence, a fresh receipt; answered once", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const approval = { approver: "ops@example.org", request_hash: await requestHash(c) };
    const r = await answer(h, c.trace_id, { human_approval: approval });
    expect(r.status).toBe(200);
    expect(r.body.receipt).toMatchObject({ verdict: "allow", block_reason: "", trace_id: c.trace_id, request_hash: denied.receipt.request_hash, action: denied.receipt.action });
    expect(r.body.receipt.nonce).not.toBe(denied.receipt.nonce);
    expect(r.body.receipt.sequence).toBeGreaterThan(denied.receipt.sequence);
    expect(r.body.runtime_context).toEqual({ human_approval: approval });
    expect(r.body).not.toHaveProperty("challenge");
    expect((await h.verify({ receipt: r.body.receipt, audience: AUDIENCE, mode: "audit" })).body).toMatchObject({ valid: true, enforcement: { verdict: "allow" } });
    const twice = await answer(h, c.trace_id, { human_approval: approval });
    expect([twice.status, twice.body.error.code]).toEqual([409, "CHALLENGE_ANSWERED"]);
    // A runtime that lost the first answer is told where its receipt is, and it is there.
    expect(twice.body.error.detail).toContain(`GET /v1/evidence/${c.trace_id}`);
    const evidence = (await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body;
    expect(evidence.receipts.at(-1)).toEqual(r.body.receipt);
  });

  it("the journal keeps the challenged deny open and records the admission the evidence earns: the trace then starts like any other", async () => {
    const c = command();
    await h.intake(c);
    const intakeAuth = { authorization: `Bearer ${INTAKE_TOKEN}` };
    const waiting = await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth });
    expect(waiting.body.record.state).toBe("awaiting_approval");
    const approval = { approver: "ops@example.org", request_hash: await requestHash(c) };
    expect((await answer(h, c.trace_id, { human_approval: approval })).body.receipt.verdict).toBe("allow");
    const ready = await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth });
    expect(ready.body.record.state).toBe("ready");
    expect(ready.body.receipts.map((r: { verdict: string }) => r.verdict)).toEqual(["deny", "allow"]);
    const started = await h.call(`/v1/receipts/${c.trace_id}/start`, { method: "POST", headers: { ...intakeAuth, "content-type": "application/json" }, body: "{}" });
    expect(started.status).toBe(200);
  });

  it("after the deadline the deny stands on every path: a second intake carrying the evidence is a retry of the deny, and the trace cannot start", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 60 });
    const approval = { approver: "ops@example.org", request_hash: await requestHash(c) };
    const again = await late.intake({ ...c, human_approval: approval });
    expect(again.body).toMatchObject({ idempotent_replay: true, receipt: { verdict: "deny", nonce: denied.receipt.nonce } });
    expect((await answer(late, c.trace_id, { human_approval: approval })).body.error.code).toBe("CHALLENGE_EXPIRED");
    const started = await late.call(`/v1/receipts/${c.trace_id}/start`, { method: "POST", headers: { authorization: `Bearer ${INTAKE_TOKEN}`, "content-type": "application/json" }, body: "{}" });
    expect(started.status).toBe(409);
  });

  it("a retry of the original intake while its challenge is open is the challenged deny with that challenge: what is still missing, by the deadline that holds (review rv-116)", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    expect(denied.challenge.missing.map((g: { evidence: string }) => g.evidence)).toEqual(["human_approval"]);
    // A runtime that lost the first answer sends the intake again: it learns what to send and by when.
    const again = await h.intake(c);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ idempotent_replay: true, receipt: denied.receipt, challenge: denied.challenge });
    // Evidence that falls short leaves the challenge open until the same deadline: a retry still shows it.
    expect((await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } })).body.receipt.verdict).toBe("deny");
    expect((await h.intake(c)).body).toMatchObject({ idempotent_replay: true, receipt: denied.receipt, challenge: { expires_at: denied.challenge.expires_at, missing: denied.challenge.missing } });
    // Past the deadline the deny stands: the retry carries no challenge.
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 });
    const stale = await late.intake(c);
    expect(stale.body).toMatchObject({ idempotent_replay: true, receipt: denied.receipt });
    expect(stale.body).not.toHaveProperty("challenge");
  });

  it("a retry of the original intake after the challenge was answered is the challenged deny again, without its challenge", async () => {
    const c = command({ tool: "delete_file", params: { path: "/tmp/report.txt" } });
    const denied = (await h.intake(c)).body;
    expect(denied.receipt.verdict).toBe("deny");
    const approval = { approver: "ops@example.org", request_hash: await requestHash(c) };
    // Evidence that still falls short first (a fresh deny), then the evidence that satisfies the check.
    expect((await answer(h, c.trace_id, { human_approval: { ...approval, request_hash: "sha256:" + "0".repeat(64) } })).body.receipt.verdict).toBe("deny");
    const allowed = (await answer(h, c.trace_id, { human_approval: approval })).body;
    expect(allowed.receipt.verdict).toBe("allow");
    for (const retry of [c, { ...c, human_approval: approval }]) {
      const again = await h.intake(retry);
      expect(again.status).toBe(200);
      expect(again.body.idempotent_replay).toBe(true);
      expect(again.body.receipt).toEqual(denied.receipt);
      expect(again.body).not.toHaveProperty("challenge");
    }
    // The admission the evidence earned is still the one the trace starts from.
    const started = await h.call(`/v1/receipts/${c.trace_id}/start`, { method: "POST", headers: { authorization: `Bearer ${INTAKE_TOKEN}`, "content-type": "application/json" }, body: "{}" });
    expect(started.status).toBe(200);
    expect(started.body.receipt).toEqual(allowed.receipt);
  });

  it("answered late: CHALLENGE_EXPIRED, and the deny stands", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 });
    const r = await answer(late, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([r.status, r.body.error.code]).toEqual([409, "CHALLENGE_EXPIRED"]);
    expect(r.text).not.toContain('"receipt"');
    // expires_at itself is still in time (another Command: the late answer above closed its record).
    const c2 = command();
    const denied2 = (await h.intake(c2)).body;
    const atDeadline = harness(env, ctx(), { now: () => denied2.challenge.expires_at });
    expect((await answer(atDeadline, c2.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c2) } })).body.receipt.verdict).toBe("allow");
  });

  it("evidence that still does not satisfy the check is a fresh deny, the challenge kept open until the same deadline", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const wrong = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } });
    expect(wrong.status).toBe(200);
    expect(wrong.body.receipt.verdict).toBe("deny");
    expect(wrong.body.challenge.expires_at).toBe(denied.challenge.expires_at);
    const right = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect(right.body.receipt.verdict).toBe("allow");
  });

  it("answers that fall short are recorded until the record holds 256 entries; the next is 409 CHALLENGE_ANSWERS_EXHAUSTED, not a 400, and the right evidence is still taken", async () => {
    const c = command();
    await h.intake(c);
    const wrong = { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } };
    // reserve, awaiting_policy, the challenged deny: 3 entries, then one per short answer.
    for (let i = 0; i < 253; i++) expect((await answer(h, c.trace_id, wrong)).status).toBe(200);
    const last = (await h.intake(command({ tool: "search_web", params: { query: "sequence" } }))).body.receipt.sequence as number;
    const over = await answer(h, c.trace_id, wrong);
    expect([over.status, over.body.error?.code]).toEqual([409, "CHALLENGE_ANSWERS_EXHAUSTED"]);
    const right = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([right.status, right.body.receipt?.verdict]).toEqual([200, "allow"]);
    // The answer refused was not signed either: no sequence number was spent on it.
    expect(right.body.receipt.sequence).toBe(last + 1);
  }, 120_000);

  it("an answer whose admission the journal could not hold is refused before it is signed: no sequence number is spent, and a shorter approver still answers (review rv-71)", async () => {
    // The key's next sequence number, read by an intake that signs one.
    const nextSequence = async () => (await h.intake(command({ tool: "search_web", params: { query: "sequence" } }))).body.receipt.sequence as number;
    // 7,000 backslashes fit the deny's record; with a 512-character approver of control characters the allow's would not.
    const c = command({ runtime_context: { x: "\\".repeat(7000) } });
    expect((await h.intake(c)).body.challenge.trace_id).toBe(c.trace_id);
    const request_hash = await requestHash(c);
    const before = await nextSequence();
    const over = await answer(h, c.trace_id, { human_approval: { approver: "\u0001".repeat(512), request_hash } });
    expect([over.status, over.body.error?.code]).toEqual([400, "MALFORMED_REQUEST"]);
    expect(over.body.error.detail).toMatch(/past the journal's 32768.*no receipt was issued/);
    // Nothing was signed for it: the next receipt has the next sequence number.
    expect(await nextSequence()).toBe(before + 1);
    const right = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash } });
    expect([right.status, right.body.receipt?.verdict, right.body.receipt?.sequence]).toEqual([200, "allow", before + 2]);
  });

  it("a Command a few hundred bytes under the message limit can still be answered: the evidence is not counted against the Command's limit", async () => {
    const parent = (await h.intake(command({ tool: "search_web", params: { query: "near the limit" } }))).body.receipt;
    const previous_receipt_hash = (await h.verify({ receipt: parent, audience: AUDIENCE, mode: "audit" })).body.receipt_hash;
    const envelope = (delegation_reason: string) => ({ envelope_version: "1.3", original_receipt: parent, parent_trace_id: parent.trace_id, child_trace_id: "0123456789abcdef", delegation_reason, hop_count: 1, previous_receipt_hash });
    const base = command();
    // 50 bytes under the limit: any approval (over 100 bytes) takes the Command with it past 131072.
    const pad = 131072 - 50 - jcs({ ...base, delegation_chain: envelope("") }).length;
    const c = { ...base, delegation_chain: envelope("r".repeat(pad)) };
    expect(jcs(c).length).toBe(131072 - 50);
    const r = await h.intake(c);
    expect(r.body.receipt).toMatchObject({ verdict: "deny", block_reason: "evidence_required: human_approval" });
    const wrong = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: "sha256:" + "0".repeat(64) } });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(200);
    expect(wrong.body.receipt.verdict).toBe("deny");
    const approval = { approver: "ops@example.org", request_hash: await requestHash(c) };
    const right = await answer(h, c.trace_id, { human_approval: approval });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    expect(right.body.receipt.verdict).toBe("allow");
    expect(right.body.runtime_context).toEqual({ human_approval: approval, delegation: expect.objectContaining({ parent_trace_id: parent.trace_id, hop_count: 1 }) });
    // Still a Command of its own limits: the same Command sent with the approval from the start is over it.
    const whole = await h.intake({ ...command(), delegation_chain: envelope("r".repeat(pad)), human_approval: approval });
    expect(whole.body.error.code).toBe("INTAKE_OVERFLOW");
  });

  it("the server profile the policy floor needs, when the configuration requires it", async () => {
    const strict = harness({ ...env, POLICY_FLOOR_REQUIRES_PROFILE: "true" } as Env, ctx());
    const c = command({ tool: "search_web", params: { query: "tides" } });
    const r = await strict.intake(c);
    expect(r.body.receipt).toMatchObject({ verdict: "deny", block_reason: "evidence_required: server_profile" });
    expect(r.body.challenge.missing).toEqual([expect.objectContaining({ evidence: "server_profile", needed_by: "policy-floor", minimum: "tls" })]);
    expect((await strict.call("/v1/config")).body.config.server_profile_required).toBe(true);
    const weak = await answer(strict, c.trace_id, { server_profile: "none" });
    expect(weak.body.receipt).toMatchObject({ verdict: "deny", block_reason: "policy_floor_violation" });
    expect(weak.body).not.toHaveProperty("challenge");
    const c2 = command({ tool: "search_web", params: { query: "tides" } });
    await strict.intake(c2);
    const ok = await answer(strict, c2.trace_id, { server_profile: "mutual-tls" });
    expect(ok.body.receipt.verdict).toBe("allow");
    expect(ok.body.runtime_context).toEqual({ server_profile: "mutual-tls" });
  });

  it("a challenge naming two pieces of evidence can be answered one at a time: the evidence already given is kept", async () => {
    const strict = harness({ ...env, POLICY_FLOOR_REQUIRES_PROFILE: "true" } as Env, ctx());
    const c = command();
    const r = await strict.intake(c);
    expect(r.body.challenge.missing.map((g: { evidence: string }) => g.evidence)).toEqual(["human_approval", "server_profile"]);
    const first = await answer(strict, c.trace_id, { server_profile: "mutual-tls" });
    expect(first.body.receipt).toMatchObject({ verdict: "deny", block_reason: "evidence_required: human_approval" });
    expect(first.body.challenge.missing.map((g: { evidence: string }) => g.evidence)).toEqual(["human_approval"]);
    const second = await answer(strict, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect(second.body.receipt.verdict).toBe("allow");
    expect(second.body.runtime_context).toEqual({ server_profile: "mutual-tls", human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
  });

  it("refuses without the intake token, evidence not asked for, a malformed trace_id, and an unknown challenge", async () => {
    const c = command();
    await h.intake(c);
    expect((await answer(h, c.trace_id, { server_profile: "tls" }, "Bearer wrong")).status).toBe(401);
    const extra = await answer(h, c.trace_id, { server_profile: "tls" });
    expect([extra.status, extra.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
    expect((await answer(h, c.trace_id, {})).status).toBe(400);
    expect((await answer(h, c.trace_id, { human_approval: { approver: "x", request_hash: "nope" } })).status).toBe(400);
    expect((await answer(h, "XYZ", { server_profile: "tls" })).status).toBe(400);
    expect((await answer(h, "00000000000000ff", { server_profile: "tls" })).status).toBe(404);
    // The refusals above gave the challenge back: it still answers.
    expect((await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } })).body.receipt.verdict).toBe("allow");
  });
});

describe("after the deadline the journal record stops waiting: the deny stands (awaiting_approval → denied)", () => {
  /** The record is a closed deny: denied, not started, outcome confirmed, listed among denied, not startable. */
  async function expectClosedDeny(traceId: string, expiresAt: number, denyReceipt: unknown) {
    const record = await h.call(`/v1/evidence/${traceId}`, { headers: intakeAuth });
    expect(record.body.record).toMatchObject({ state: "denied", effect: "not-started", outcome_status: "confirmed", verdict: "deny" });
    expect(record.body.history.at(-1)).toMatchObject({ from: "awaiting_approval", to: "denied", at: expiresAt, receipt: null, detail: { challenge_expired_at: expiresAt } });
    expect(record.body.receipts).toEqual([denyReceipt]);
    const listed = await h.call(`/v1/evidence?agent_id=challenge-agent&state=denied&limit=200`, { headers: intakeAuth });
    expect(listed.body.records.map((r: { trace_id: string }) => r.trace_id)).toContain(traceId);
    const started = await startCall(h, traceId);
    expect([started.status, started.body.error.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    expect(started.body.error.detail).toContain("denied");
  }

  it("a late answer closes it when it arrives first, and is still CHALLENGE_EXPIRED", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 });
    const r = await answer(late, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([r.status, r.body.error.code]).toEqual([409, "CHALLENGE_EXPIRED"]);
    await expectClosedDeny(c.trace_id, denied.challenge.expires_at, denied.receipt);
    // Again: the same answer, nothing more written.
    expect((await answer(late, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } })).body.error.code).toBe("CHALLENGE_EXPIRED");
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.history).toHaveLength(4);
  });

  it("a late answer that closes it exports the closure's tool execution event once; a late answer to a closed one exports nothing (review rv-127)", async () => {
    // Before, the denied step a late answer's call wrote was exported by nothing.
    const c = command();
    const denied = (await h.intake(c)).body;
    const seen: ProjectedAttributes[] = [];
    const context = ctx();
    const late = harness(env, context, { now: () => denied.challenge.expires_at + 1, exporter: (a) => void seen.push(a) });
    const evidence = { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } };
    expect((await answer(late, c.trace_id, evidence)).body.error.code).toBe("CHALLENGE_EXPIRED");
    expect((await answer(late, c.trace_id, evidence)).body.error.code).toBe("CHALLENGE_EXPIRED");
    await waitOnExecutionContext(context);
    expect(seen).toEqual([{ "event.name": "tool_execution", "event.id": `${recordIdOf(c.trace_id)}:4`, "tool.name": "drop_table", "tool.execution.state": "denied", "tool.execution.effect": "not-started", "tool.execution.journal": "intake", trace_id: c.trace_id, time: denied.challenge.expires_at }]);
  });

  it("the challenge's alarm closes it at the deadline with no answer at all; then an answer is CHALLENGE_EXPIRED, and the row is deleted after its retention", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const stub = challengeObject(c.trace_id);
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe(denied.challenge.expires_at * 1000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await expectClosedDeny(c.trace_id, denied.challenge.expires_at, denied.receipt);
    // The clock of this call is still before the deadline: the closed challenge answers nothing.
    const r = await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect([r.status, r.body.error.code]).toEqual([409, "CHALLENGE_EXPIRED"]);
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe((denied.challenge.expires_at + 3600) * 1000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // Deleted whole: no row and no table is left behind the retention.
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => tables(state))).toEqual([]);
    expect((await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } })).status).toBe(404);
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => tables(state))).toEqual([]);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("denied");
  });

  it("an attempt still in flight does not reopen a challenge an answer took or answered before the recorded attempt's confirmation (review rv-79)", async () => {
    const stub = challengeObject("00000000000c0f18");
    const opened = { message: "{\"trace_id\":\"00000000000c0f18\"}", audience: AUDIENCE, gaps: "[\"human_approval\"]", issued_at: TEST_NOW, expires_at: TEST_NOW + 300 };
    await runInDurableObject(stub, (o: IntakeChallenges) => o.open(opened, "recorded-attempt"));
    // The journal recorded that attempt and an answer took the challenge before its confirmation came (or the confirmation failed).
    expect((await runInDurableObject(stub, (o: IntakeChallenges) => o.take(TEST_NOW + 1))).kind).toBe("open");
    expect(await runInDurableObject(stub, (o: IntakeChallenges) => o.open({ ...opened, expires_at: TEST_NOW + 310 }, "attempt-in-flight"))).toBe(false);
    await runInDurableObject(stub, (o: IntakeChallenges) => o.answered());
    // Before: the later attempt's open put the row back to 'open', as that attempt's.
    expect(await runInDurableObject(stub, (o: IntakeChallenges) => o.open({ ...opened, expires_at: TEST_NOW + 320 }, "attempt-in-flight"))).toBe(false);
    const row = await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.sql.exec("SELECT state, attempt, expires_at FROM challenge").one());
    expect(row).toEqual({ state: "answered", attempt: "recorded-attempt", expires_at: TEST_NOW + 300 });
  });

  it("a deadline alarm that ran before the journal held the admission (it found no record) runs again once the admission is recorded, and closes it (review rv-78)", async () => {
    const c = command();
    // The challenge opens, and its alarm runs at once, before the journal holds the record: nothing to close.
    const early = harness(env, ctx(), {
      intake: {
        openChallenge: async (record, attempt) => {
          const stub = challengeObject(c.trace_id);
          await stub.open(record, attempt);
          expect(await runDurableObjectAlarm(stub)).toBe(true);
          expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.sql.exec("SELECT state FROM challenge").one().state)).toBe("closed");
        },
      },
    });
    const denied = (await early.intake(c)).body;
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    // Before: the row stayed closed, its alarm only deleted it, and the record awaited evidence for good.
    expect(await runDurableObjectAlarm(challengeObject(c.trace_id))).toBe(true);
    await expectClosedDeny(c.trace_id, denied.challenge.expires_at, denied.receipt);
  });

  it("an answer signed under a configuration no intake has issued under yet records it, so GET /v1/config/{hash} answers it after the next change", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    // The deployment's configuration changes between the deny and its answer; no intake runs under the new one.
    const changed = harness({ ...env, CHALLENGE_MAX_DEADLINE: "540" } as Env, ctx());
    const r = await answer(changed, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } });
    expect(r.status).toBe(200);
    const hash = r.body.receipt.config_hash;
    expect(hash).not.toBe(denied.receipt.config_hash);
    // Then it changes back: the configuration that receipt was signed under is still answered.
    const back = await harness(env, ctx()).call(`/v1/config/${encodeURIComponent(hash)}`);
    expect([back.status, back.body.config_hash]).toEqual([200, hash]);
  });

  it("an answer for a trace_id no challenge was opened for is 404 and creates nothing in its object", async () => {
    for (const traceId of ["00000000000a11ce", "00000000000b0b00"]) {
      for (const evidence of [{}, { server_profile: "tls" }]) {
        const r = await answer(h, traceId, evidence);
        expect([r.status, r.body.error.code]).toEqual([404, "NOT_FOUND"]);
      }
      expect(await runInDurableObject(challengeObject(traceId), (_o: IntakeChallenges, state) => tables(state))).toEqual([]);
      expect(await runInDurableObject(challengeObject(traceId), (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBeNull();
    }
  });

  it("evidence accepted in time is not undone by the alarm: the record stays ready and starts", async () => {
    const c = command();
    await h.intake(c);
    expect((await answer(h, c.trace_id, { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } })).body.receipt.verdict).toBe("allow");
    const stub = challengeObject(c.trace_id);
    // The first run finds the challenge taken and waits for its answer; the second finds nothing waiting.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("ready");
    expect((await startCall(h, c.trace_id)).status).toBe(200);
  });

  it("an answer sent while another is being judged is told so, not that the challenge was answered; once one is recorded, it is", async () => {
    // Shown live (review rv-62): at the cap, answers that fell short held the challenge while they
    // were judged, and the right approval sent beside them was told 'already answered with its
    // evidence' in every round, while the record still awaited it.
    const c = command();
    await h.intake(c);
    const stub = challengeObject(c.trace_id);
    const right = { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } };
    await runInDurableObject(stub, (o: IntakeChallenges) => expect(o.take(TEST_NOW).kind).toBe("open"));
    const busy = await answer(h, c.trace_id, right);
    expect([busy.status, busy.body.error.code]).toEqual([409, "CHALLENGE_ANSWERED"]);
    expect(busy.body.error.detail).toMatch(/being judged/);
    expect(busy.body.error.detail).not.toMatch(/already answered/);
    // The answer being judged fell short: the challenge is given back, and the same answer is taken.
    await runInDurableObject(stub, (o: IntakeChallenges) => o.release(null));
    const taken = await answer(h, c.trace_id, right);
    expect([taken.status, taken.body.receipt?.verdict]).toEqual([200, "allow"]);
    const again = await answer(h, c.trace_id, right);
    expect([again.status, again.body.error.code]).toEqual([409, "CHALLENGE_ANSWERED"]);
    expect(again.body.error.detail).toMatch(/already answered/);
  });

  it("a challenge answered in time is told answered after its deadline too, not that the deny stands (review rv-65)", async () => {
    // Before, a retry after the deadline (or after the deadline's alarm) of an answer that earned an
    // allow was told 409 CHALLENGE_EXPIRED 'the deny stands', while the record was ready with the allow.
    const c = command();
    const denied = (await h.intake(c)).body;
    const right = { human_approval: { approver: "ops@example.org", request_hash: await requestHash(c) } };
    expect((await answer(h, c.trace_id, right)).body.receipt.verdict).toBe("allow");
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 });
    const stub = challengeObject(c.trace_id);
    for (const when of ["after the deadline", "after the deadline's alarm"]) {
      if (when === "after the deadline's alarm") expect(await runDurableObjectAlarm(stub)).toBe(true);
      const r = await answer(late, c.trace_id, right);
      expect([when, r.status, r.body.error.code, r.body.error.detail]).toEqual([when, 409, "CHALLENGE_ANSWERED", expect.stringMatching(/^this challenge was already answered with its evidence; the receipt that answer earned is the record's latest, on GET \/v1\/evidence\//)]);
    }
    // Nothing was closed, and the row is deleted when its retention ends.
    expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe((denied.challenge.expires_at + 3600) * 1000);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("ready");
  });

  it("an answer recorded whose 'answered' mark failed to write is still told answered, before and after the deadline and its alarm, not that the deny stands (review rv-72)", async () => {
    // Before, the mark (best effort) failing left the row taken: a second answer was told another
    // was 'being judged' until the deadline, then CHALLENGE_EXPIRED 'the deny stands', and the
    // alarm recorded the challenge closed, while the record was ready with the allow.
    const right = (c: Record<string, unknown>) => requestHash(c).then((request_hash) => ({ human_approval: { approver: "ops@example.org", request_hash } }));
    const unmarked = harness(env, ctx(), { intake: { markAnswered: () => Promise.reject(new Error("challenge store down")) } });
    const failed = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      // The route asks the journal when the row says otherwise, and writes the mark again.
      const c = command();
      const denied = (await h.intake(c)).body;
      const allowed = await answer(unmarked, c.trace_id, await right(c));
      expect([allowed.status, allowed.body.receipt?.verdict]).toEqual([200, "allow"]);
      expect(failed.mock.calls.map(([line]) => JSON.parse(String(line)).event)).toContain("challenge_answered_mark_failed");
      for (const [when, caller] of [["before the deadline", unmarked], ["after the deadline", harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 })], ["again", h]] as const) {
        const r = await answer(caller, c.trace_id, await right(c));
        expect([when, r.status, r.body.error?.code, r.body.error?.detail]).toEqual([when, 409, "CHALLENGE_ANSWERED", expect.stringMatching(/^this challenge was already answered with its evidence/)]);
      }
      expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("ready");

      // The alarm, with no answer in between, asks the journal too: the row ends answered, not closed.
      const d = command();
      const deniedD = (await h.intake(d)).body;
      expect((await answer(unmarked, d.trace_id, await right(d))).body.receipt?.verdict).toBe("allow");
      const stub = challengeObject(d.trace_id);
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect(await runDurableObjectAlarm(stub)).toBe(true);
      expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.sql.exec<{ state: string }>("SELECT state FROM challenge").one().state)).toBe("answered");
      const late = await answer(harness(env, ctx(), { now: () => deniedD.challenge.expires_at + 1 }), d.trace_id, await right(d));
      expect([late.status, late.body.error?.code]).toEqual([409, "CHALLENGE_ANSWERED"]);
      expect((await h.call(`/v1/evidence/${d.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("ready");
      expect(await runInDurableObject(stub, (_o: IntakeChallenges, state) => state.storage.getAlarm())).toBe((deniedD.challenge.expires_at + 3600) * 1000);
    } finally {
      failed.mockRestore();
    }
  });

  it("an answer being judged when the deadline passes is waited for; given back, the record is closed on the next run", async () => {
    const c = command();
    const denied = (await h.intake(c)).body;
    const stub = challengeObject(c.trace_id);
    await runInDurableObject(stub, (o: IntakeChallenges) => expect(o.take(TEST_NOW).kind).toBe("open"));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    // While it is judged, a late answer does not close the record under it either.
    const late = harness(env, ctx(), { now: () => denied.challenge.expires_at + 1 });
    expect((await answer(late, c.trace_id, { server_profile: "tls" })).body.error.code).toBe("CHALLENGE_EXPIRED");
    expect((await h.call(`/v1/evidence/${c.trace_id}`, { headers: intakeAuth })).body.record.state).toBe("awaiting_approval");
    await runInDurableObject(stub, (o: IntakeChallenges) => o.release(null));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await expectClosedDeny(c.trace_id, denied.challenge.expires_at, denied.receipt);
  });
});
