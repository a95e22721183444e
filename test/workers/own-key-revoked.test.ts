/**
 * Issuance fails closed once this deployment's own signing key is revoked: intake, the answer to a
 * challenge and finalisation sign nothing (a receipt under a revoked key only fails ANCHOR_REVOKED).
 * Its own file: the revocation is for good, and storage is isolated per file.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { harness, INTAKE_TOKEN, issuerFor, TEST_NOW, type Harness } from "../support/app-harness.js";

let traces = 0;
const trace = () => (0xb000 + ++traces).toString(16).padStart(16, "0");
const command = (extra: Record<string, unknown> = {}) => ({
  intake_version: "1.3", agent_id: "revoked-agent", tool: "search_web", params: { query: "weather in Tokyo" }, timestamp: TEST_NOW - 1, trace_id: trace(), ...extra,
});

let h: Harness;
const post = (path: string, body: unknown) => h.call(path, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: JSON.stringify(body) });
let issuer: { issuer: string; kid: string };
const LIVE_CHAIN = "own-key-revoked-live";

beforeAll(async () => {
  h = harness(env, createExecutionContext());
  const doc = await h.call("/.well-known/ccs-issuer");
  expect((await h.pin(doc.body)).status).toBe(200);
  issuer = { issuer: doc.body.issuer, kid: doc.body.keys[0].kid };
  // A live chain whose hop another issuer signed: the revocation below does not break it.
  const other = await issuerFor("own-key-revoked-hop");
  expect((await h.pin(other.anchor)).status).toBe(200);
  const { receipt } = await other.receipt();
  const appended = await h.call(`/v1/chains/${LIVE_CHAIN}/hops`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ entry: { hop_count: 0, receipt } }) });
  expect(appended.status, appended.text).toBe(200);
  expect((await h.call(`/v1/chains/${LIVE_CHAIN}`)).body.seal).toMatchObject({ issuer: issuer.issuer, kid: issuer.kid });
});

describe("issuing after this deployment's own signing key was revoked", () => {
  it("intake answers INTAKE_FAILED 503 and writes nothing; finalize and a challenge's answer answer 503 SIGNING_KEY_REVOKED", async () => {
    const started = command();
    expect((await h.intake(started)).body.receipt.verdict).toBe("allow");
    expect((await post(`/v1/receipts/${started.trace_id}/start`, {})).status).toBe(200);
    const challenged = command({ tool: "delete_file", params: { path: "/tmp/x" } });
    const denied = await h.intake(challenged);
    expect(denied.body.challenge).toBeTruthy();

    expect((await h.revoke(issuer.issuer, issuer.kid)).status).toBe(200);

    const late = command();
    const r = await h.intake(late);
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: { code: "INTAKE_FAILED", retry: "MAY", detail: expect.stringMatching(/signing key has been revoked/), trace_id: late.trace_id } });
    expect(r.text).not.toMatch(/"receipt"|test-signing-1/);
    expect((await h.call(`/v1/evidence/${late.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).status).toBe(404);

    const f = await post(`/v1/receipts/${started.trace_id}/finalize`, { fence: 1, response: { results: ["sunny"] } });
    expect(f.status).toBe(503);
    expect(f.body.error.code).toBe("SIGNING_KEY_REVOKED");
    const e = await h.call(`/v1/evidence/${started.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } });
    expect(e.body.record.state).toBe("started");

    const approval = { approver: "alice@example.com", request_hash: denied.body.receipt.request_hash };
    const answered = await post(`/v1/intake/${challenged.trace_id}/evidence`, { human_approval: approval });
    expect(answered.status).toBe(503);
    expect(answered.body.error.code).toBe("SIGNING_KEY_REVOKED");
  });

  it("a live chain's read signs no seal under the revoked key: 503 SIGNING_KEY_REVOKED (it answered a fresh seal no verifier here accepts)", async () => {
    const read = await h.call(`/v1/chains/${LIVE_CHAIN}`);
    expect(read.status, read.text).toBe(503);
    expect(read.body.error.code).toBe("SIGNING_KEY_REVOKED");
    expect(read.text).not.toMatch(/"signature"/);
  });

  it("the manifest is not signed under the revoked key either: /.well-known/ccs-manifest and the own verifier's manifest are 503 SIGNING_KEY_REVOKED", async () => {
    const wellKnown = await h.call("/.well-known/ccs-manifest");
    expect([wellKnown.status, wellKnown.body?.error?.code]).toEqual([503, "SIGNING_KEY_REVOKED"]);
    const own = await h.call(`/v1/verifiers/${encodeURIComponent(issuer.issuer)}/manifest`);
    expect([own.status, own.body?.error?.code]).toEqual([503, "SIGNING_KEY_REVOKED"]);
    expect(own.text).not.toMatch(/"signature"/);
    // Nor does it hold a profile any more: routing finds no manifest of its own.
    const resolved = await h.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ profile: "ccs/1.3/intake" }) });
    expect(resolved.status, resolved.text).toBe(200);
    expect(resolved.text).not.toMatch(/"HELD"/);
  });

  it("the status page shows no manifest as published either: it says the key was revoked (it showed the manifest's window and hashes as GET /.well-known/ccs-manifest serves them)", async () => {
    const page = await h.call("/");
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("Published at <code>GET /.well-known/ccs-manifest</code>");
    expect(page.text).not.toContain("profiles_digest");
    expect(page.text).toContain("this deployment's signing key has been revoked, so it publishes none");
  });
});
