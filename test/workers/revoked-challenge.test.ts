/**
 * Traces waiting on a human, admitted under this deployment's own key and answered after that key
 * was revoked and replaced: each is marked for reconciliation and can never start, so neither a
 * challenge's evidence nor an escalation's approval moves it on. The challenge's answer is refused
 * before the challenge is used; the approval is a retry of the escalation. Nothing is signed under
 * the new key that nothing could act on.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { IntakeChallenges } from "../../durable-objects/intake-challenges.js";
import type { Env } from "../../worker/env.js";
import { harness, INTAKE_TOKEN, TEST_NOW, type Harness } from "../support/app-harness.js";

const command = (trace_id: string, tool: string, params: Record<string, unknown>) => ({ intake_version: "1.3", agent_id: "revoked-agent", tool, params, timestamp: TEST_NOW - 1, trace_id });
const challenged = command("00000000000f0001", "drop_table", { table: "t" });
const escalated = command("00000000000f0002", "shell_exec", { cmd: 'rm -rf "$BUILD_DIR/out"' });
const first: Record<string, any> = {};
let rekeyed: Harness;
const evidence = (traceId: string) => rekeyed.call(`/v1/evidence/${traceId}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });

beforeAll(async () => {
  const h = harness(env, createExecutionContext());
  const own = (await h.call("/.well-known/ccs-issuer")).body;
  expect((await h.pin(own)).status).toBe(200);
  for (const c of [challenged, escalated]) first[c.trace_id] = (await h.intake(c)).body;
  expect(first[challenged.trace_id].challenge.trace_id).toBe(challenged.trace_id);
  expect(first[escalated.trace_id].receipt.verdict).toBe("escalate");
  expect((await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint })).status).toBe(200);
  rekeyed = harness({ ...env, SIGNING_KEY: "cd".repeat(32), SIGNING_KID: "rekeyed-1" } as Env, createExecutionContext());
});

describe("a trace admitted under a since-revoked own key, answered after a re-key", () => {
  it("a challenge's answer is EXECUTION_NOT_ELIGIBLE, and the challenge stays open", async () => {
    const answered = await rekeyed.call(`/v1/intake/${challenged.trace_id}/evidence`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` },
      body: JSON.stringify({ human_approval: { approver: "ops@example.org", request_hash: first[challenged.trace_id].receipt.request_hash } }),
    });
    expect([answered.status, answered.body.error?.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
    const state = await runInDurableObject(env.INTAKE_CHALLENGES.get(env.INTAKE_CHALLENGES.idFromName(challenged.trace_id)), async (_o: IntakeChallenges, s) => s.storage.sql.exec<{ state: string }>("SELECT state FROM challenge").one().state);
    expect(state).toBe("open");
    const record = await evidence(challenged.trace_id);
    expect(record.body.record.state).toBe("awaiting_approval");
    expect(record.body.receipts).toHaveLength(1);
  });

  it("an escalation's approval signs nothing: it is answered as a retry of the escalation", async () => {
    const before = first[escalated.trace_id].receipt;
    const approved = await rekeyed.intake({ ...escalated, human_approval: { approver: "ops@example.org", request_hash: before.request_hash } });
    expect(approved.body).toMatchObject({ idempotent_replay: true, receipt: { verdict: "escalate", nonce: before.nonce } });
    const record = await evidence(escalated.trace_id);
    expect(record.body.record.state).toBe("awaiting_approval");
    expect(record.body.receipts).toHaveLength(1);
  });
});
