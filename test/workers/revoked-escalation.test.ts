/**
 * An escalation (SEC-002) admitted under this deployment's own key, approved after that key was
 * revoked and replaced: the trace is marked for reconciliation and can never start, so the approval
 * is a retry of the escalation and signs nothing, instead of an allow under the new key nothing can act on.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { expect, it } from "vitest";
import type { Env } from "../../worker/env.js";
import { harness, INTAKE_TOKEN, TEST_NOW } from "../support/app-harness.js";

it("an approval of an escalation admitted under a since-revoked key signs nothing: the trace is marked and is answered as a retry of its escalation", async () => {
  const h = harness(env, createExecutionContext());
  const own = (await h.call("/.well-known/ccs-issuer")).body;
  expect((await h.pin(own)).status).toBe(200);
  const c = { intake_version: "1.3", agent_id: "revoked-agent", tool: "shell_exec", params: { cmd: 'rm -rf "$BUILD_DIR/out"' }, timestamp: TEST_NOW - 1, trace_id: "00000000000f0002" };
  const first = await h.intake(c);
  expect(first.body.receipt.verdict).toBe("escalate");
  const revoked = await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint });
  expect(revoked.status).toBe(200);

  const rekeyed = harness({ ...env, SIGNING_KEY: "cd".repeat(32), SIGNING_KID: "rekeyed-1" } as Env, createExecutionContext());
  const approved = await rekeyed.intake({ ...c, human_approval: { approver: "ops@example.org", request_hash: first.body.receipt.request_hash } });
  expect(approved.body).toMatchObject({ idempotent_replay: true, receipt: { verdict: "escalate", nonce: first.body.receipt.nonce } });
  const record = await rekeyed.call(`/v1/evidence/${c.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
  expect(record.body.record.state).toBe("awaiting_approval");
  expect(record.body.receipts).toHaveLength(1);
});
