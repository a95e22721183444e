/**
 * CCS §14, "MUST re-validate in-flight evidence when a trust anchor is revoked", in workerd with
 * real Durable Objects: revoking a key breaks every live chain holding a hop it signed at that hop
 * (its seal withdrawn) and marks every journal record admitted under it and still in flight for
 * reconciliation; GET /v1/admin/revocations/{fingerprint} lists both. Chains and records the key
 * never signed stay as they were.
 */
import { env } from "cloudflare:workers";
import { abortAllDurableObjects, createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { makeChainHops } from "../../vectors/ccs/factory.js";
import { journalShards } from "../../worker/config.js";
import { INTAKE_TENANT, journalObjectName, type JournalStub } from "../../worker/journal-store.js";
import { recordIdOf } from "../../worker/protocol/journal/core.js";
import { buildChain } from "../../worker/protocol/chain.js";
import type { IssuerLedger } from "../../durable-objects/issuer-ledger.js";
import { AUDIENCE, harness, INTAKE_TOKEN, issuerFor, SECOND_AUDIENCE, TEST_NOW, type Harness } from "../support/app-harness.js";

let counter = 0;
const post = (body: unknown, token?: string) => ({ method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });

/** Signs a linked hop per identity and appends the first `appended` of them (all by default) to a live chain. */
async function liveChain(h: Harness, chainId: string, ids: Awaited<ReturnType<typeof issuerFor>>[], appended = ids.length) {
  const hops = await makeChainHops(ids.map((i) => ({ id: i.id, spec: { label: `revocation/${chainId}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter } })));
  for (const [n, hop] of hops.slice(0, appended).entries()) {
    const entry = { hop_count: n, receipt: hop.receipt, runtime_context: hop.runtime_context, ...(n > 0 ? { previous_receipt_hash: (await h.call(`/v1/chains/${chainId}`)).body.tail } : {}) };
    const res = await h.call(`/v1/chains/${chainId}/hops`, post({ entry }));
    expect(res.status, res.text).toBe(200);
  }
  return hops;
}

describe("revoking a key under live chains", () => {
  it("breaks each chain at the first hop the key signed and withdraws its seal; a chain it never signed keeps its seal; the broken chain takes no further hop", async () => {
    const h = harness(env, createExecutionContext());
    const planner = await issuerFor("revocation-planner");
    const worker = await issuerFor("revocation-worker");
    await h.pin(planner.anchor);
    await h.pin(worker.anchor);
    const mixedHops = await liveChain(h, "rev-mixed", [planner, worker, planner], 2);
    await liveChain(h, "rev-worker-only", [worker]);
    await liveChain(h, "rev-planner-only", [planner, planner]);
    expect((await h.call("/v1/chains/rev-mixed")).body).toMatchObject({ chain_valid: true, broken_at_hop: null, seal: { chain_id: "rev-mixed" } });

    const revoked = await h.revoke(worker.id.issuer, worker.id.kid);
    expect(revoked.status).toBe(200);
    expect(revoked.body.in_flight).toEqual({ chains: 2, journal_records: 0 });
    const fingerprint = revoked.body.fingerprint;

    const mixed = (await h.call("/v1/chains/rev-mixed")).body;
    expect(mixed).toMatchObject({ chain_valid: false, broken_at_hop: 1, revoked: { hop: 1, fingerprint }, seal: null, total_hops: 2 });
    expect((await h.call("/v1/chains/rev-worker-only")).body).toMatchObject({ chain_valid: false, broken_at_hop: 0, seal: null });
    // The honest path: a chain the revoked key never signed is untouched.
    expect((await h.call("/v1/chains/rev-planner-only")).body).toMatchObject({ chain_valid: true, broken_at_hop: null, revoked: null, seal: { chain_id: "rev-planner-only" } });

    const listed = await h.admin("GET", `/v1/admin/revocations/${fingerprint}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ fingerprint, issuer: worker.id.issuer, kid: worker.id.kid, journal_records: [] });
    expect(listed.body.chains).toEqual([
      { chain_id: "rev-mixed", broken_at_hop: 1, seal_withdrawn: true },
      { chain_id: "rev-worker-only", broken_at_hop: 0, seal_withdrawn: true },
    ]);

    // Nothing is appended after the break, even a hop by a key still trusted.
    const next = mixedHops[2];
    const appended = await h.call("/v1/chains/rev-mixed/hops", post({ entry: { hop_count: 2, receipt: next.receipt, runtime_context: next.runtime_context, previous_receipt_hash: mixed.tail } }));
    expect(appended.status).toBe(409);
    expect(appended.body.error.code).toBe("CHAIN_BROKEN");
    // Refused before its nonce is claimed: the break is known before the receipt is judged, so the
    // honest receipt is not burnt and still verifies where it is addressed.
    expect(appended.body.nonce_consumed).toBe(false);
    const after = await h.verify({ receipt: next.receipt, audience: AUDIENCE, request: next.request, runtime_context: next.runtime_context });
    expect(after.body.failures.map((f: { code: string }) => f.code)).not.toContain("REPLAY_DETECTED");
    expect(after.body.nonce_consumed).toBe(true);

    // Revoking again changes nothing and answers the same effects.
    expect((await h.revoke(worker.id.issuer, worker.id.kid)).body.in_flight).toEqual({ chains: 2, journal_records: 0 });
  });

  it("a revocation whose withdrawn-receipt write fails is 503 VERIFIER_UNAVAILABLE, not 500, and revoking again completes it", async () => {
    const h = harness(env, createExecutionContext());
    const signer = await issuerFor("revocation-kv-down");
    await h.pin(signer.anchor);
    await liveChain(h, "rev-kv-down", [signer]);
    const failWithdrawn = (key: string, value: string) => (key.startsWith("withdrawn-receipt:") ? Promise.reject(new Error("kv down")) : env.ANCHORS.put(key, value));
    const brokenKv = { ...env, ANCHORS: { ...env.ANCHORS, get: env.ANCHORS.get.bind(env.ANCHORS), put: failWithdrawn } } as unknown as typeof env;
    const failed = await harness(brokenKv, createExecutionContext()).revoke(signer.id.issuer, signer.id.kid);
    expect([failed.status, failed.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    const again = await h.revoke(signer.id.issuer, signer.id.kid);
    expect([again.status, again.body.in_flight]).toEqual([200, { chains: 1, journal_records: 0 }]);
    expect((await h.call("/v1/chains/rev-kv-down")).body).toMatchObject({ chain_valid: false, broken_at_hop: 0, seal: null });
  });

  it("a revocation listing is for revoked keys only; a fingerprint not of that form is 400", async () => {
    const h = harness(env, createExecutionContext());
    expect((await h.admin("GET", `/v1/admin/revocations/${"ab".repeat(32)}`)).status).toBe(404);
    expect((await h.admin("GET", "/v1/admin/revocations/not-hex")).status).toBe(400);
    expect((await h.call(`/v1/admin/revocations/${"ab".repeat(32)}`)).status).toBe(401);
  });
});

describe("revoking this deployment's own key under its receipt journal", () => {
  let traces = 0;
  const trace = () => (0xe000 + ++traces).toString(16).padStart(16, "0");
  const command = (extra: Record<string, unknown> = {}) => ({ intake_version: "1.3", agent_id: "revocation-agent", tool: "search_web", params: { query: "weather in Tokyo" }, timestamp: TEST_NOW - 1, trace_id: trace(), ...extra });

  it("marks every record admitted under it and still in flight for reconciliation, refuses to start them, lists them; settled records are not marked", async () => {
    const h = harness(env, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const intake = async (c: Record<string, unknown>) => {
      const res = await h.intake(c);
      expect(res.status, res.text).toBe(200);
      return c.trace_id as string;
    };
    const ready = await intake(command());
    const started = await intake(command());
    const denied = await intake(command({ tool: "shell_exec", params: { command: "rm -rf /" } }));
    const finished = await intake(command());
    const lifecycle = (traceId: string, step: string, body: unknown) => h.call(`/v1/receipts/${traceId}/${step}`, post(body, INTAKE_TOKEN));
    expect((await lifecycle(started, "start", {})).status).toBe(200);
    const fence = (await lifecycle(finished, "start", {})).body.fence;
    expect((await lifecycle(finished, "finalize", { fence, response: { forecast: "sunny" } })).status).toBe(200);

    const revoked = await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint });
    expect(revoked.status).toBe(200);
    expect(revoked.body.in_flight).toEqual({ chains: 0, journal_records: 2 });

    const evidence = async (traceId: string) => (await h.call(`/v1/evidence/${traceId}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).body;
    expect((await evidence(ready)).reconciliation).toMatchObject({ state: "ready", fingerprint: own.keys[0].fingerprint, trace_id: ready });
    expect((await evidence(started)).reconciliation).toMatchObject({ state: "started" });
    // Settled records stay as they were: a deny and a finalised execution are not in flight.
    expect((await evidence(denied)).reconciliation).toBeNull();
    expect((await evidence(finished)).reconciliation).toBeNull();

    const refused = await lifecycle(ready, "start", {});
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");

    // After the revocation nothing more is admitted under the revoked key (own-key-revoked.test.ts).
    const late = command();
    expect((await h.intake(late)).status).toBe(503);

    const listed = await h.admin("GET", `/v1/admin/revocations/${own.keys[0].fingerprint}`);
    expect(listed.body.chains).toEqual([]);
    expect(listed.body.journal_records.map((m: { trace_id: string }) => m.trace_id).sort()).toEqual([ready, started].sort());
  });

  it("a start racing the revocation is refused by the journal itself: a claim landing after the record was marked does not start it (the start's look at the mark is a separate call)", async () => {
    const keyed = { ...env, SIGNING_KEY: "9e1c7a55d0b34f6e8a2d4c6b8f0e1a3c5b7d9f1e3a5c7b9d1f3e5a7c9b1d3f5e", SIGNING_KID: "test-signing-race" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const c = command();
    expect((await h.intake(c)).status).toBe(200);
    const recordId = recordIdOf(c.trace_id);
    const shard = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(journalObjectName(INTAKE_TENANT, recordId, journalShards(keyed)))) as unknown as JournalStub;
    const loaded = await shard.load(recordId);
    if (loaded.kind !== "found") throw new Error(loaded.kind);
    expect(loaded.record.state).toBe("ready");
    // The start route has looked (no mark yet); the revocation's journal step lands now; then the claim.
    const marks = await shard.revokeKey(own.keys[0].fingerprint, TEST_NOW, TEST_NOW, 30);
    expect(marks.map((m) => m.record_id)).toEqual([recordId]);
    const claimed = await shard.claim({ record_id: recordId, expected_revision: loaded.record.revision, at: TEST_NOW, lease_seconds: 60 });
    expect(claimed.kind).toBe("not-eligible");
    const after = await shard.load(recordId);
    if (after.kind !== "found") throw new Error(after.kind);
    expect(after.record.state).toBe("ready");
  });

  it("a marked admission still lapses: once past its window, a start closes it expired like any other, instead of leaving it ready for good", async () => {
    // A signing key of its own: the test above revoked the configured one in this file's storage.
    const keyed = { ...env, SIGNING_KEY: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", SIGNING_KID: "test-signing-lapse" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const c = command();
    const admitted = await h.intake(c);
    expect(admitted.status, admitted.text).toBe(200);
    expect((await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint })).status).toBe(200);
    const evidence = async () => (await h.call(`/v1/evidence/${c.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).body;
    expect((await evidence()).record.state).toBe("ready");
    // Later than the admission's expires_at plus any skew: nothing can start on it, revoked or not.
    const later = harness(keyed, createExecutionContext(), { now: () => admitted.body.receipt.expires_at + 3600 });
    const refused = await later.call(`/v1/receipts/${c.trace_id}/start`, post({}, INTAKE_TOKEN));
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
    const after = await evidence();
    expect(after.record.state).toBe("expired");
    expect(after.reconciliation).toMatchObject({ state: "expired", trace_id: c.trace_id, fingerprint: own.keys[0].fingerprint });
  });
});

describe("revoking a key long after most of its admissions lapsed", () => {
  it("marks only the ready admissions that could still start: one past expires_at + skew cap is not in flight, so a key's whole history is never marked", async () => {
    const keyed = { ...env, SIGNING_KEY: "5a466203db803373799431f290a1349e8daed31d4a564b5379552a178ac53fbf", SIGNING_KID: "test-signing-history" } as typeof env;
    const at = (now: number) => harness(keyed, createExecutionContext(), { now: () => now });
    const early = at(TEST_NOW);
    const own = (await early.call("/.well-known/ccs-issuer")).body;
    expect((await early.pin(own)).status).toBe(200);
    const command = (now: number) => ({ intake_version: "1.3", agent_id: "history-agent", tool: "search_web", params: { query: "weather" }, timestamp: now - 1, trace_id: crypto.randomUUID().replaceAll("-", "").slice(0, 16) });
    const old = command(TEST_NOW);
    const lapsed = await early.intake(old);
    expect(lapsed.status, lapsed.text).toBe(200);
    // Revoked one skew cap (30 s) and one second after the old admission's window: it cannot start any more.
    const later = lapsed.body.receipt.expires_at + 31;
    const late = at(later);
    const fresh = command(later);
    expect((await late.intake(fresh)).status).toBe(200);
    const revoked = await late.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.in_flight).toEqual({ chains: 0, journal_records: 1 });
    const listed = await late.admin("GET", `/v1/admin/revocations/${own.keys[0].fingerprint}`);
    expect(listed.body.journal_records.map((m: { trace_id: string }) => m.trace_id)).toEqual([fresh.trace_id]);
    // The lapsed one still closes expired when a start is tried, marked or not.
    const refused = await late.call(`/v1/receipts/${old.trace_id}/start`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${INTAKE_TOKEN}` }, body: "{}" });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("EXECUTION_NOT_ELIGIBLE");
  });

  it("an admission noted before expires_at was kept (a migrated shard) is judged in flight, conservatively, and the column is added on wake", async () => {
    const keyed = { ...env, SIGNING_KEY: "6b577314ec914484800542a401b2c02ece1e9e42b5a757a48a663b289bd6c0ac", SIGNING_KID: "test-signing-migrated" } as typeof env;
    const ctx = createExecutionContext();
    const h = harness(keyed, ctx);
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const c = { intake_version: "1.3", agent_id: "migrated-agent", tool: "search_web", params: { query: "weather" }, timestamp: TEST_NOW - 1, trace_id: crypto.randomUUID().replaceAll("-", "").slice(0, 16) };
    const admitted = await h.intake(c);
    expect(admitted.status, admitted.text).toBe(200);
    const shards = () => Array.from({ length: journalShards(keyed) }, (_, i) => env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(`${INTAKE_TENANT}#${i}`)));
    // As a shard from before the column: every admission's expires_at unknown.
    for (const shard of shards()) {
      await runInDurableObject(shard, (_instance, state) => {
        const columns = state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('admission_keys')").toArray().map((r) => r.name);
        if (columns.includes("expires_at")) state.storage.sql.exec("ALTER TABLE admission_keys DROP COLUMN expires_at");
        // … and from before delegated admissions were indexed by their parent's key: no delegation_keys, no marks' via.
        state.storage.sql.exec("DROP TABLE IF EXISTS delegation_keys");
        const marks = state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('reconciliation_marks')").toArray().map((r) => r.name);
        if (marks.includes("via")) state.storage.sql.exec("ALTER TABLE reconciliation_marks DROP COLUMN via");
      });
    }
    await waitOnExecutionContext(ctx);
    await abortAllDurableObjects();
    const later = harness(keyed, createExecutionContext(), { now: () => admitted.body.receipt.expires_at + 3600 });
    const revoked = await later.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint });
    expect(revoked.status, revoked.text).toBe(200);
    const listed = await later.admin("GET", `/v1/admin/revocations/${own.keys[0].fingerprint}`);
    expect(listed.body.journal_records.map((m: { trace_id: string }) => m.trace_id)).toContain(c.trace_id);
    expect(listed.body.journal_records.find((m: { trace_id: string }) => m.trace_id === c.trace_id).via).toBe("admission");
    // Fresh stubs: the ones above belong to the instances aborted.
    for (const shard of shards()) {
      const columns = await runInDurableObject(shard, (_instance, state) => state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('admission_keys')").toArray().map((r) => r.name));
      if (columns.length) expect(columns).toContain("expires_at");
      if (!columns.length) continue;
      const [delegation, marks] = await runInDurableObject(shard, (_instance, state) => [
        state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('delegation_keys')").toArray().map((r) => r.name),
        state.storage.sql.exec<{ name: string }>("SELECT name FROM pragma_table_info('reconciliation_marks')").toArray().map((r) => r.name),
      ]);
      expect(delegation).toContain("fingerprint");
      expect(marks).toContain("via");
    }
  });
});

describe("revoking the key that signed a delegation's parent", () => {
  const trace = () => crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  const command = (extra: Record<string, unknown> = {}) => ({ intake_version: "1.3", agent_id: "delegated-agent", tool: "search_web", params: { query: "weather in Oslo" }, timestamp: TEST_NOW - 1, trace_id: trace(), ...extra });

  it("marks the children admitted before it (and their own delegated children) as a revocation of their own key would: listed, start refused, evidence says so; settled children and other parents' children stay unmarked", async () => {
    // A signing key of this test's own: another test of this file revokes the configured one.
    const keyed = { ...env, SIGNING_KEY: "0f4b1d2c3a5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8", SIGNING_KID: "test-signing-delegation" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const parentIssuer = await issuerFor("revocation-delegation-parent");
    const otherIssuer = await issuerFor("revocation-delegation-other");
    await h.pin(parentIssuer.anchor);
    await h.pin(otherIssuer.anchor);
    const parent = (await parentIssuer.receipt({ tool: "search_web", params: { query: "plan" } })).receipt;
    const otherParent = (await otherIssuer.receipt({ tool: "search_web", params: { query: "plan" } })).receipt;
    const intake = async (c: Record<string, unknown>) => {
      const res = await h.intake(c);
      expect(res.status, res.text).toBe(200);
      expect(res.body.receipt.verdict, res.text).toBe("allow");
      return res.body.receipt;
    };
    const ready = command({ delegation_chain: parent });
    const readyReceipt = await intake(ready);
    const started = command({ delegation_chain: parent });
    await intake(started);
    const finished = command({ delegation_chain: parent });
    await intake(finished);
    const other = command({ delegation_chain: otherParent });
    await intake(other);
    // The parent wrapped in an Evidence Envelope: the key is found through the envelope's receipt just the same.
    const parentHash = (await h.verify({ receipt: parent, audience: AUDIENCE, mode: "audit" })).body.receipt_hash;
    const enveloped = command({ delegation_chain: { envelope_version: "1.3", original_receipt: parent, parent_trace_id: parent.trace_id, child_trace_id: trace(), delegation_reason: "hand-off", hop_count: 1, previous_receipt_hash: parentHash } });
    await intake(enveloped);
    // A grandchild: delegated from a child this deployment signed, its authority still rests on the parent's key.
    const grandchild = command({ delegation_chain: readyReceipt });
    await intake(grandchild);
    const lifecycle = (traceId: string, step: string, body: unknown) => h.call(`/v1/receipts/${traceId}/${step}`, post(body, INTAKE_TOKEN));
    expect((await lifecycle(started.trace_id, "start", {})).status).toBe(200);
    const fence = (await lifecycle(finished.trace_id, "start", {})).body.fence;
    expect((await lifecycle(finished.trace_id, "finalize", { fence, response: { forecast: "rain" } })).status).toBe(200);

    const revoked = await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.in_flight).toEqual({ chains: 0, journal_records: 4 });
    const fingerprint = revoked.body.fingerprint;

    const evidence = async (traceId: string) => (await h.call(`/v1/evidence/${traceId}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).body;
    expect((await evidence(ready.trace_id)).reconciliation).toMatchObject({ state: "ready", fingerprint, trace_id: ready.trace_id, via: "delegation" });
    expect((await evidence(started.trace_id)).reconciliation).toMatchObject({ state: "started", fingerprint, via: "delegation" });
    expect((await evidence(grandchild.trace_id)).reconciliation).toMatchObject({ state: "ready", fingerprint, via: "delegation" });
    expect((await evidence(enveloped.trace_id)).reconciliation).toMatchObject({ state: "ready", fingerprint, via: "delegation" });
    expect((await evidence(finished.trace_id)).reconciliation).toBeNull();
    expect((await evidence(other.trace_id)).reconciliation).toBeNull();

    for (const traceId of [ready.trace_id, grandchild.trace_id]) {
      const refused = await lifecycle(traceId, "start", {});
      expect([refused.status, refused.body.error?.code]).toEqual([409, "EXECUTION_NOT_ELIGIBLE"]);
      // The refusal names the key that was revoked for what it is: the parent's, not the admission's own …
      if (traceId === ready.trace_id) expect(refused.body.error.detail).toContain("delegated from a parent receipt signed under a key revoked");
      // … and, for a grandchild, a key further up: its parent was signed under this deployment's key,
      // which is still trusted (review rv-78: it was told its parent was signed under the revoked key).
      else {
        expect(refused.body.error.detail).toContain("delegated from a parent receipt whose own delegation rests on a key revoked");
        expect(refused.body.error.detail).not.toContain("parent receipt signed under a key revoked");
      }
    }
    expect((await lifecycle(other.trace_id, "start", {})).status).toBe(200);

    const listed = await h.admin("GET", `/v1/admin/revocations/${fingerprint}`);
    expect(listed.status).toBe(200);
    expect(listed.body.journal_records.map((m: { trace_id: string }) => m.trace_id).sort()).toEqual([ready.trace_id, started.trace_id, grandchild.trace_id, enveloped.trace_id].sort());
    expect(listed.body.journal_records.every((m: { via: string }) => m.via === "delegation")).toBe(true);

    // Revoking again is idempotent.
    expect((await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid)).body.in_flight).toEqual({ chains: 0, journal_records: 4 });

    // A new child of the revoked parent is refused; so is a new grandchild through a child the
    // revocation marked: that child's receipt was withdrawn (RECEIPT_WITHDRAWN), so it delegates nothing.
    const late = await h.intake(command({ delegation_chain: parent }));
    expect(late.body.receipt.block_reason).toBe("delegation_invalid: ANCHOR_REVOKED");
    const lateGrandchild = await h.intake(command({ delegation_chain: readyReceipt }));
    expect(lateGrandchild.body.receipt).toMatchObject({ verdict: "deny", block_reason: "delegation_invalid: RECEIPT_WITHDRAWN" });
  });

  it("withdraws the nonce of each child it marks: its receipt is refused RECEIPT_WITHDRAWN in every mode and in a chain, never consumed; a child presented before stays a replay; other receipts accept; the row goes with its retention", async () => {
    const keyed = { ...env, SIGNING_KEY: "3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c", SIGNING_KID: "test-signing-withdraw" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const parentIssuer = await issuerFor("revocation-withdraw-parent");
    await h.pin(parentIssuer.anchor);
    const parent = (await parentIssuer.receipt({ tool: "search_web", params: { query: "plan" } })).receipt;
    const admit = async (c: Record<string, any>) => {
      const res = await h.intake(c);
      expect(res.status, res.text).toBe(200);
      expect(res.body.receipt.verdict, res.text).toBe("allow");
      return res.body;
    };
    const request = (c: Record<string, any>) => ({ agent_id: c.agent_id, tool: c.tool, params: c.params, timestamp: c.timestamp, trace_id: c.trace_id });
    const childCommand = command({ delegation_chain: parent });
    const child = await admit(childCommand);
    const earlyCommand = command({ delegation_chain: parent });
    const early = await admit(earlyCommand);
    const plainCommand = command();
    const plain = await admit(plainCommand);
    const verify = (body: Record<string, any>, c: Record<string, any>, extra: Record<string, unknown> = {}) => h.verify({ receipt: body.receipt, audience: AUDIENCE, request: request(c), runtime_context: body.runtime_context, ...extra });
    // Presented before the revocation: its nonce is consumed, and stays so.
    expect((await verify(early, earlyCommand)).body).toMatchObject({ decision: "accept", nonce_consumed: true });

    const revoked = await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.in_flight).toEqual({ chains: 0, journal_records: 2 });

    const codes = (b: any) => b.failures.map((f: { code: string }) => f.code);
    for (const mode of ["audit", "enforce", "enforce"]) {
      const refused = await verify(child, childCommand, { mode });
      expect(refused.status, refused.text).toBe(200);
      expect(refused.body).toMatchObject({ valid: false, decision: mode === "audit" ? "audit" : "reject", nonce_consumed: false });
      expect(codes(refused.body), mode).toEqual(["RECEIPT_WITHDRAWN"]);
      expect(refused.body.failures[0]).toMatchObject({ severity: "CRITICAL", detail: `the receipt was withdrawn: a key its delegation rests on was revoked at ${revoked.body.revoked_at}` });
    }
    expect(codes((await verify(early, earlyCommand)).body)).toEqual(["REPLAY_DETECTED"]);
    expect((await verify(plain, plainCommand)).body).toMatchObject({ decision: "accept", nonce_consumed: true, failures: [] });

    // The withdrawal is the nonce's state, told in audit only to a party the receipt is addressed to
    // and only for a receipt its issuer signed (as REPLAY_DETECTED is): a party holding only another
    // audience learns nothing of it, nor does anyone through a forged receipt carrying its nonce.
    const OTHER = "withdraw-other-party-token-0123456789abcdef";
    expect([201, 409]).toContain((await h.admin("POST", "/v1/admin/relying-parties", { name: "withdraw-other-party", audiences: [SECOND_AUDIENCE], token: OTHER })).status);
    const asOther = (body: unknown) => h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${OTHER}` }, body: JSON.stringify(body) });
    const notAddressed = await asOther({ receipt: child.receipt, audience: SECOND_AUDIENCE, mode: "audit" });
    expect(notAddressed.status, notAddressed.text).toBe(200);
    expect(codes(notAddressed.body)).toEqual(["AUDIENCE_MISMATCH"]);
    const forged = await asOther({ receipt: { ...child.receipt, audience: SECOND_AUDIENCE }, audience: SECOND_AUDIENCE, mode: "audit" });
    expect(forged.status, forged.text).toBe(200);
    expect(codes(forged.body)).toEqual(["SIGNATURE_INVALID"]);
    expect(forged.body).toMatchObject({ valid: false, decision: "audit", nonce_consumed: false });

    // A grandchild through the child presented before (its nonce consumed, not withdrawn) is
    // admitted after the revocation and marked as it is written: its receipt is withdrawn then.
    const lateCommand = command({ delegation_chain: early.receipt });
    const late = await admit(lateCommand);
    expect((await h.call(`/v1/evidence/${lateCommand.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).body.reconciliation).toMatchObject({ via: "delegation" });
    const lateVerified = await verify(late, lateCommand);
    expect(lateVerified.body).toMatchObject({ decision: "reject", nonce_consumed: false });
    expect(codes(lateVerified.body)).toEqual(["RECEIPT_WITHDRAWN"]);

    // In a chain (replay ignored there), the child's hop is refused too.
    const chain = await buildChain("withdrawn-child", [{ receipt: parent }, { receipt: child.receipt, runtime_context: child.runtime_context }]);
    const chained = await h.call("/v1/chains/verify", post({ chain }));
    expect(chained.status, chained.text).toBe(200);
    expect(chained.body.chain_valid).toBe(false);
    expect(JSON.stringify(chained.body)).toContain("RECEIPT_WITHDRAWN");
    // A forged copy carrying the child's nonce tells nothing of it there either (any relying party may verify any chain).
    const forgedChain = await buildChain("withdrawn-forged", [{ receipt: { ...child.receipt, audience: SECOND_AUDIENCE } }]);
    const forgedChained = await h.call("/v1/chains/verify", post({ chain: forgedChain }));
    expect(forgedChained.status, forgedChained.text).toBe(200);
    expect(forgedChained.body.failures.map((f: { code: string; hop: number }) => [f.code, f.hop])).toEqual([["SIGNATURE_INVALID", 0]]);

    // Revoking again writes nothing new and keeps the consumed nonce a replay.
    expect((await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid)).status).toBe(200);
    expect(codes((await verify(early, earlyCommand)).body)).toEqual(["REPLAY_DETECTED"]);

    // The withdrawn row is held until the child's expires_at + its granted skew, then purged.
    const ledger = keyed.ISSUER_LEDGER.get(keyed.ISSUER_LEDGER.idFromName(own.issuer));
    const nonce = child.receipt.nonce;
    const rowOf = () => runInDurableObject(ledger, (_i: IssuerLedger, state) => state.storage.sql.exec<{ retain_until: number; withdrawn: number | null }>("SELECT retain_until, withdrawn FROM nonces WHERE nonce = ?", nonce).toArray()[0]);
    const row = await rowOf();
    expect(row).toEqual({ retain_until: child.receipt.expires_at + Math.min(child.receipt.max_clock_skew, 30), withdrawn: revoked.body.revoked_at });
    await runInDurableObject(ledger, (instance: IssuerLedger) => instance.purge((row!.retain_until - 1) * 1000));
    expect(await rowOf()).toBeDefined();
    await runInDurableObject(ledger, (instance: IssuerLedger) => instance.purge(row!.retain_until * 1000));
    expect(await rowOf()).toBeUndefined();
  });

  it("withdraws a marked child's admission receipt, not the final receipt of an execution started before the revocation: revoking again leaves that final receipt accepted", async () => {
    // Before (review rv-82), the revocation withdrew every receipt in a marked record's entries: a
    // child started before the revocation and finalised after it had its final receipt accepted until
    // the key was revoked again (an idempotent call, the retry of a 503), which then withdrew it.
    const keyed = { ...env, SIGNING_KEY: "5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d", SIGNING_KID: "test-signing-final" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const parentIssuer = await issuerFor("revocation-final-parent");
    await h.pin(parentIssuer.anchor);
    const parent = (await parentIssuer.receipt({ tool: "search_web", params: { query: "plan" } })).receipt;
    const c = command({ delegation_chain: parent });
    const admitted = await h.intake(c);
    expect(admitted.body.receipt.verdict, admitted.text).toBe("allow");
    const lifecycle = (step: string, body: unknown) => h.call(`/v1/receipts/${c.trace_id}/${step}`, post(body, INTAKE_TOKEN));
    const started = await lifecycle("start", {});
    expect(started.status, started.text).toBe(200);
    expect((await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid)).body.in_flight).toEqual({ chains: 0, journal_records: 1 });
    const response = { forecast: "sunny" };
    const finalised = await lifecycle("finalize", { fence: started.body.fence, response });
    expect(finalised.status, finalised.text).toBe(200);
    const request = { agent_id: c.agent_id, tool: c.tool, params: c.params, timestamp: c.timestamp, trace_id: c.trace_id };
    const verify = (receipt: unknown, mode: string, extra: Record<string, unknown> = {}) => h.verify({ receipt, audience: AUDIENCE, request, runtime_context: admitted.body.runtime_context, mode, ...extra });
    const codes = (b: any) => b.failures.map((f: { code: string }) => f.code);
    expect(codes((await verify(finalised.body.receipt, "audit", { response })).body)).toEqual([]);
    expect((await h.revoke(parentIssuer.id.issuer, parentIssuer.id.kid)).status).toBe(200);
    // The admission's receipt is withdrawn; the final receipt, outcome evidence of an execution that started before the revocation, is not.
    expect(codes((await verify(admitted.body.receipt, "audit")).body)).toEqual(["RECEIPT_WITHDRAWN"]);
    const final = await verify(finalised.body.receipt, "enforce", { response });
    expect(final.body, final.text).toMatchObject({ decision: "accept", nonce_consumed: true, failures: [] });
  });

  it("an admission revoked under its own key says so (via admission)", async () => {
    const keyed = { ...env, SIGNING_KEY: "7c2e4a6b8d0f1e3c5a7b9d1f3e5c7a9b1d3f5e7c9a1b3d5f7e9c1a3b5d7f9e1c", SIGNING_KID: "test-signing-via" } as typeof env;
    const h = harness(keyed, createExecutionContext());
    const own = (await h.call("/.well-known/ccs-issuer")).body;
    expect((await h.pin(own)).status).toBe(200);
    const c = command();
    expect((await h.intake(c)).status).toBe(200);
    expect((await h.admin("POST", "/v1/admin/anchors/revoke", { issuer: own.issuer, fingerprint: own.keys[0].fingerprint })).status).toBe(200);
    const evidence = (await h.call(`/v1/evidence/${c.trace_id}`, { headers: { authorization: `Bearer ${INTAKE_TOKEN}` } })).body;
    expect(evidence.reconciliation).toMatchObject({ trace_id: c.trace_id, via: "admission" });
  });
});
