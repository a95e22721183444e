/**
 * A challenge whose deny was admitted under this deployment's own key, answered after that key was
 * revoked and replaced: the trace is marked for reconciliation and can never start, so the answer
 * is refused before the challenge is used, instead of signing an allow nothing can act on.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import type { IntakeChallenges } from "../../durable-objects/intake-challenges.js";
import type { Env } from "../../worker/env.js";
import { jcs, prefixedDigest } from "../../worker/protocol/digest.js";
import { harness, INTAKE_TOKEN, TEST_NOW } from "../support/app-harness.js";

it("an answer to a challenge admitted under a since-revoked key is EXECUTION_NOT_ELIGIBLE, and the challenge stays open", async () => {
  const h = harness(env, createExecutionContext());
  const own = (await h.call("/.well-known/ccs-issuer")).body;
  expect((await h.pin(own)).status).toBe(200);
  const c = { intake_version: "1.3", agent_id: "revoked-agent", tool: "drop_table", params: { table: "t" }, timestamp: TEST_NOW - 1, trace_id: "00000000000f0001" };
  const first = await h.intake(c);
  expect(first.body.challenge.trace_id).toBe(c.trace_id);
  const revoked = await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint });
  expect(revoked.status).toBe(200);

  const rekeyed = harness({ ...env, SIGNING_KEY: "cd".repeat(32), SIGNING_KID: "rekeyed-1" } as Env, createExecutionContext());
  const request_hash = await prefixedDigest(jcs({ agent_id: c.agent_id, tool: c.tool, params: c.params, timestamp: c.timestamp, trace_id: c.trace_id }));
  const answered = await rekeyed.call(`/v1/intake/${c.trace_id}/evidence`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` },
    body: JSON.stringify({ human_approval: { approver: "ops@example.org", request_hash } }),
  });
  expect([answered.status, answered.body.error?.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
  const state = await runInDurableObject(env.INTAKE_CHALLENGES.get(env.INTAKE_CHALLENGES.idFromName(c.trace_id)), async (_o: IntakeChallenges, s) => s.storage.sql.exec<{ state: string }>("SELECT state FROM challenge").one().state);
  expect(state).toBe("open");
  const record = await rekeyed.call(`/v1/evidence/${c.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
  expect(record.body.record.state).toBe("awaiting_approval");
  expect(record.body.receipts).toHaveLength(1);
});
