/**
 * Usage, cost and reconciliation evidence end to end: the four routes inside workerd with a real
 * UsageLedger per relying party.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { journalShards } from "../../worker/config.js";
import { durableJournalStub, journalObjectName, partyTenant } from "../../worker/journal-store.js";
import type { UsageLedger } from "../../durable-objects/usage-ledger.js";
import type { ProjectedAttributes } from "../../worker/protocol/observability.js";
import { readUsageCounts, usageLedger } from "../../worker/usage-store.js";
import { createProviderCostRecord, providerRecordKey } from "../../worker/protocol/usage/reconcile.js";
import { partyScope, type RelyingParty } from "../../worker/protocol/relying-parties.js";
import { AUDIENCE, harness, RP_NAME, RP_TOKEN, TEST_NOW } from "../support/app-harness.js";
import { createApp } from "../../worker/app.js";

const FULL = { input_tokens: 1200, output_tokens: 300, total_tokens: 1500, reasoning_tokens: 100, cached_input_tokens: 200 };
const MODEL = { provider: "openai", model: "gpt-4.1-2025-04-14", profile: "fast-chat" };
const SOURCE = { id: "openai-list-prices", version: "2025-06", effective_at: 1_700_000_000, currency: "USD", verified: true, per_million_tokens: { input_tokens: "2.00", output_tokens: "8", cached_input_tokens: "0.50" } };
const DIGEST = `sha256:${"b".repeat(64)}`;

let n = 0;
const receipt = (extra: Record<string, unknown> = {}) => ({
  invocation_id: `inv-${++n}`,
  observed_at: 1_800_000_000,
  model: MODEL,
  provider_request_id: `req_${n}`,
  usage: FULL,
  attribution: { kind: "attributed" },
  pricing: { kind: "unavailable", reason: "not-provided" },
  ...extra,
});
const record = (r: { provider_request_id: string }, extra: Record<string, unknown> = {}) => ({
  provider: "openai", source: "openai-usage-api", source_version: "v1", evidence_ref: { id: "export-1", digest: DIGEST },
  provider_request_id: r.provider_request_id, currency: "USD", amount: "0.00490", ...extra,
});

function setup(options: Parameters<typeof harness>[2] = {}) {
  const ctx = createExecutionContext();
  const h = harness(env, ctx, options);
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    h.call(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const get = (id: string, headers: Record<string, string> = {}) => h.call(`/v1/usage?invocation_id=${encodeURIComponent(id)}`, { headers });
  return { ctx, h, post, get };
}

describe("POST /v1/usage/receipts", () => {
  it("a journal_record in this deployment's record-id form must name a record of the caller's own journal, of the same invocation", async () => {
    const { post } = setup();
    const reserved = await post("/v1/journal/reserve", { idempotency_key: "usage-journal-1", action_digest: "sha256:u", attributes: { invocation_id: "inv-journaled" } });
    expect(reserved.body.kind).toBe("created");
    const id = reserved.body.record.record_id;
    const ok = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-journaled" }), journal_record: id });
    expect(ok.status).toBe(201);
    expect(ok.body.journal_record).toBe(id);
    const other = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-not-journaled" }), journal_record: id });
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe("EVIDENCE_IDENTITY_MISMATCH");
    // A reservation naming an invocation_id that is not a string (12, {}) names no receipt's invocation: it was taken unchecked.
    for (const [n, named] of [[2, 12], [3, { id: "inv-any" }], [4, ["inv-any"]]] as const) {
      const odd = (await post("/v1/journal/reserve", { idempotency_key: `usage-journal-${n}`, action_digest: "sha256:u", attributes: { invocation_id: named } })).body.record.record_id;
      const refused = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-any" }), journal_record: odd });
      expect([refused.status, refused.body.error?.code]).toEqual([400, "EVIDENCE_IDENTITY_MISMATCH"]);
    }
  });

  it("the journal_record check reads the record's reservation, not its history: another invocation's record and an unknown record are still refused (review rv-72)", async () => {
    // Before, the check loaded the whole history to read the reservation's attributes: ~0.25-0.65 s
    // live for a record at the history's size bound (31 entries of deeply nested details). Here a
    // journal whose history read fails answers the check as before, since it is not read.
    const historyRead = vi.fn(() => Promise.reject(new Error("the history was read")));
    const { post } = setup({
      journalStub: (e) => (name) => {
        const real = durableJournalStub(e)(name);
        return new Proxy(real, { get: (target, key) => (key === "load" ? historyRead : Reflect.get(target, key)) });
      },
    });
    const reserved = await post("/v1/journal/reserve", { idempotency_key: "usage-journal-reservation", action_digest: "sha256:u", attributes: { invocation_id: "inv-reserved" } });
    const id = reserved.body.record.record_id as string;
    let revision = 1;
    for (const to of ["awaiting_policy", "awaiting_approval", "awaiting_approval", "awaiting_approval"]) {
      const appended = await post("/v1/journal/append", { record_id: id, expected_revision: revision, to, effect: "not-started", detail: { d: Array.from({ length: 200 }, () => [[[[0]]]]) } });
      expect(appended.body.kind).toBe("appended");
      revision = appended.body.record.revision;
    }
    const ok = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-reserved" }), journal_record: id });
    expect([ok.status, ok.body.journal_record]).toEqual([201, id]);
    const other = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-another" }), journal_record: id });
    expect([other.status, other.body.error?.code]).toEqual([400, "EVIDENCE_IDENTITY_MISMATCH"]);
    const unknown = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-reserved-2" }), journal_record: "0123456789abcdef0123456789abcdef" });
    expect([unknown.status, unknown.body.error?.code]).toEqual([400, "USAGE_EVIDENCE_INVALID"]);
    expect(unknown.body.error.detail).toBe("journal_record names no record of this relying party's journal");
    expect(historyRead).not.toHaveBeenCalled();
  });

  it("a journal_record whose reservation or latest entry was altered is 500 JOURNAL_HISTORY_INVALID: the entries that vouch for the reservation and the row are checked", async () => {
    const { post } = setup();
    const registered = (await env.ANCHORS.get<RelyingParty>(`rp:${RP_NAME}`, "json"))!;
    for (const [n, revision, alter] of [
      [1, 1, (e: Record<string, any>) => ({ ...e, detail: { ...e.detail, attributes: { invocation_id: "inv-other-1" } } })],
      [2, 1, (e: Record<string, any>) => ({ ...e, detail: { ...e.detail, attributes: {} } })],
      [3, 3, (e: Record<string, any>) => ({ ...e, at: e.at + 1 })],
    ] as const) {
      const reserved = await post("/v1/journal/reserve", { idempotency_key: `usage-journal-altered-${n}`, action_digest: "sha256:u", attributes: { invocation_id: `inv-altered-${n}` } });
      const id = reserved.body.record.record_id as string;
      // Record 1 keeps its reservation alone (the row's head vouches for it); the others go on two steps.
      if (n > 1) {
        expect((await post("/v1/journal/append", { record_id: id, expected_revision: 1, to: "awaiting_policy", effect: "not-started" })).body.kind).toBe("appended");
        expect((await post("/v1/journal/append", { record_id: id, expected_revision: 2, to: "awaiting_approval", effect: "not-started" })).body.kind).toBe("appended");
      }
      const stub = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(journalObjectName(partyTenant(partyScope(registered)), id, journalShards(env))));
      await runInDurableObject(stub, (_instance, state) => {
        const sql = state.storage.sql;
        const entry = JSON.parse(sql.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? AND revision = ?", id, revision).one().entry);
        sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = ?", JSON.stringify(alter(entry)), id, revision);
      });
      const failed = vi.spyOn(console, "error").mockImplementation(() => {});
      try {
        const refused = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: `inv-other-${n}` }), journal_record: id });
        expect([n, refused.status, refused.body.error.code]).toEqual([n, 500, "JOURNAL_HISTORY_INVALID"]);
      } finally {
        failed.mockRestore();
      }
    }
  });

  it("a journal_record whose stored history does not add up is 500 JOURNAL_HISTORY_INVALID, logged as every refused history is", async () => {
    const { post } = setup();
    const reserved = await post("/v1/journal/reserve", { idempotency_key: "usage-journal-corrupt", action_digest: "sha256:u", attributes: { invocation_id: "inv-corrupt" } });
    const id = reserved.body.record.record_id as string;
    expect((await post("/v1/journal/append", { record_id: id, expected_revision: 1, to: "awaiting_policy", effect: "not-started" })).body.kind).toBe("appended");
    const registered = (await env.ANCHORS.get<RelyingParty>(`rp:${RP_NAME}`, "json"))!;
    const stub = env.RECEIPT_JOURNAL.get(env.RECEIPT_JOURNAL.idFromName(journalObjectName(partyTenant(partyScope(registered)), id, journalShards(env))));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      const entry = JSON.parse(sql.exec<{ entry: string }>("SELECT entry FROM entries WHERE record_id = ? AND revision = 2", id).one().entry);
      sql.exec("UPDATE entries SET entry = ? WHERE record_id = ? AND revision = 2", JSON.stringify({ ...entry, to: "ready" }), id);
    });
    const failed = vi.spyOn(console, "error");
    try {
      const refused = await post("/v1/usage/receipts", { receipt: receipt({ invocation_id: "inv-corrupt" }), journal_record: id });
      expect([refused.status, refused.body.error.code]).toEqual([500, "JOURNAL_HISTORY_INVALID"]);
      const lines = failed.mock.calls.map(([line]) => JSON.parse(String(line)));
      expect(lines).toContainEqual(expect.objectContaining({ event: "journal_history_invalid", record_id: id }));
    } finally {
      failed.mockRestore();
    }
  });

  it("validates and stores a receipt once, with what rides on it; a retry is the stored answer; GET reads it back", async () => {
    const { post, get } = setup();
    const r = receipt();
    const body = {
      receipt: r,
      journal_record: "journal:tenant-a:idem-42",
      cache: { kind: "reuse", avoided: { kind: "declared-baseline", baseline_id: "prompt-v3", baseline: { input_tokens: 2000 }, avoided: { input_tokens: 800 } } },
      budget_decisions: [{ invocation_id: r.invocation_id, decision: "warn", phase: "after-invocation", limit: { name: "daily", metric: "total_tokens", threshold: "1000" }, decided_at: 1_800_000_001 }],
    };
    const first = await post("/v1/usage/receipts", body);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ stored: true, invocation_id: r.invocation_id, receipt: r, journal_record: "journal:tenant-a:idem-42", estimate: null, reconciliation: null });
    expect(first.body.cache.kind).toBe("reuse");
    expect(first.body.budget_decisions).toHaveLength(1);
    const again = await post("/v1/usage/receipts", body);
    expect(again.status).toBe(200);
    expect(again.body.stored).toBe(false);
    const read = await get(r.invocation_id);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ ...first.body, stored: undefined, stored_at: read.body.stored_at, updated_at: read.body.updated_at } as never);
  });

  it("another receipt for a stored invocation is a conflict; a receipt is never rewritten", async () => {
    const { post, get } = setup();
    const r = receipt();
    expect((await post("/v1/usage/receipts", { receipt: r })).status).toBe(201);
    const other = await post("/v1/usage/receipts", { receipt: { ...r, usage: { ...FULL, output_tokens: 301 } } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("USAGE_RECORD_CONFLICT");
    expect((await get(r.invocation_id)).body.receipt.usage.output_tokens).toBe(300);
  });

  it("builds the receipt from an observed model response, dropping its content and metadata", async () => {
    const { post } = setup();
    const res = await post("/v1/usage/receipts", {
      observed: {
        invocation_id: "inv-observed",
        observed_at: 1_800_000_000,
        response: { status: "completed", model: { profile: MODEL }, request_id: "req_o", content: [{ text: "SECRET answer" }], warnings: [], errors: [], native: { fp: "SECRET" } },
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.receipt.attribution).toEqual({ kind: "unavailable", reason: "not-reported" });
    expect(res.body.receipt.usage).toBeUndefined();
    expect(res.text).not.toMatch(/SECRET/);
  });

  it("refusals are 400 with their code and store nothing", async () => {
    const { post, get } = setup();
    const cases: [unknown, string][] = [
      [{ receipt: receipt({ invocation_id: "inv-over", usage: { input_tokens: 5 } }) }, "USAGE_EVIDENCE_INVALID"],
      [{ receipt: receipt({ invocation_id: "inv-zero", usage: { input_tokens: 0 }, attribution: { kind: "unavailable", reason: "not-reported" } }) }, "USAGE_EVIDENCE_INVALID"],
      [{ receipt: receipt({ invocation_id: "inv-proto" }), cache: JSON.parse('{"kind": "miss", "__proto__": {"x": 1}}') }, "USAGE_EVIDENCE_INVALID"],
      [{ receipt: receipt({ invocation_id: "inv-cred", model: { ...MODEL, authorization: "Bearer x" } }) }, "USAGE_EVIDENCE_INVALID"],
      [{ receipt: receipt({ invocation_id: "inv-budget" }), budget_decisions: [{ invocation_id: "inv-else", decision: "allow", phase: "before-invocation", limit: { name: "d", metric: "total_tokens", threshold: "1" }, decided_at: 1 }] }, "EVIDENCE_IDENTITY_MISMATCH"],
      [{ receipt: receipt({ invocation_id: "inv-journal" }), journal_record: "https://x/y" }, "MALFORMED_REQUEST"],
      [{ receipt: receipt({ invocation_id: "inv-journal-missing" }), journal_record: "0".repeat(32) }, "USAGE_EVIDENCE_INVALID"],
      [{ receipt: receipt({ invocation_id: "inv-both" }), observed: {} }, "MALFORMED_REQUEST"],
      [{ receipt: receipt({ invocation_id: "inv-extra" }), extra: 1 }, "MALFORMED_REQUEST"],
    ];
    for (const [body, code] of cases) {
      const res = await post("/v1/usage/receipts", body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.code).toBe(code);
    }
    const dup = await post("/v1/usage/receipts", '{"receipt": {"invocation_id": "inv-dup", "invocation_id": "inv-dup"}}');
    expect(dup.status).toBe(400);
    expect(dup.body.error.code).toBe("MALFORMED_REQUEST");
    for (const id of ["inv-over", "inv-zero", "inv-proto", "inv-cred", "inv-budget", "inv-journal"]) expect((await get(id)).status).toBe(404);
  });

  it("a cache reuse against a prior observation this party stored must take that receipt's observation as its baseline (review rv-117)", async () => {
    // Before, the baseline was taken as given even when the prior invocation's own receipt, stored
    // here, observed something else: the record said "prior observation" of a count never observed.
    const { post, get } = setup();
    const prior = receipt({ usage: { ...FULL, input_tokens: 2000 } });
    expect((await post("/v1/usage/receipts", { receipt: prior })).status).toBe(201);
    const reuse = (baseline: Record<string, number>, avoided: Record<string, number>) => ({ kind: "reuse", avoided: { kind: "prior-observation", prior_invocation_id: prior.invocation_id, baseline, avoided } });
    const lying = receipt();
    const refused = await post("/v1/usage/receipts", { receipt: lying, cache: reuse({ input_tokens: 5000 }, { input_tokens: 3800 }) });
    expect([refused.status, refused.body.error.code]).toEqual([400, "USAGE_EVIDENCE_INVALID"]);
    expect(refused.body.error.detail).toContain(`prior invocation ${prior.invocation_id} observed 2000 input_tokens`);
    expect((await get(lying.invocation_id)).status).toBe(404);
    // A metric the prior receipt never observed cannot be its baseline either.
    const partialPrior = receipt({ usage: { input_tokens: 2000 }, attribution: { kind: "partial", missing: ["output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"] } });
    expect((await post("/v1/usage/receipts", { receipt: partialPrior })).status).toBe(201);
    const unobserved = await post("/v1/usage/receipts", { receipt: lying, cache: { kind: "reuse", avoided: { kind: "prior-observation", prior_invocation_id: partialPrior.invocation_id, baseline: { output_tokens: 400 }, avoided: { output_tokens: 100 } } } });
    expect([unobserved.status, unobserved.body.error.code]).toEqual([400, "USAGE_EVIDENCE_INVALID"]);
    // The prior observation as stored is taken, and so is a prior invocation not stored here (observed elsewhere).
    const honest = await post("/v1/usage/receipts", { receipt: lying, cache: reuse({ input_tokens: 2000, output_tokens: 300 }, { input_tokens: 800, output_tokens: 0 }) });
    expect(honest.status).toBe(201);
    const elsewhere = receipt();
    const external = await post("/v1/usage/receipts", { receipt: elsewhere, cache: { kind: "reuse", avoided: { kind: "prior-observation", prior_invocation_id: "inv-observed-elsewhere", baseline: { input_tokens: 5000 }, avoided: { input_tokens: 3800 } } } });
    expect(external.status).toBe(201);
  });

  it("takes a relying-party token: without one it is 401 and nothing is stored", async () => {
    const { post, h } = setup();
    const r = receipt();
    const res = await post("/v1/usage/receipts", { receipt: r }, { authorization: "" });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("UNAUTHORIZED");
    for (const path of [`/v1/usage?invocation_id=${r.invocation_id}`]) expect((await h.call(path, { headers: { authorization: "" } })).status).toBe(401);
    for (const path of ["/v1/costs/estimate", "/v1/costs/reconcile"]) expect((await post(path, {}, { authorization: "" })).status).toBe(401);
    expect((await setup().get(r.invocation_id)).status).toBe(404);
  });

  it("records are the storing party's: another relying party reads and derives nothing from them", async () => {
    const { post, get, h } = setup();
    const token = "second-usage-party-token-0123456789abcdef";
    const reg = await h.admin("POST", "/v1/admin/relying-parties", { name: "usage-second-party", audiences: [AUDIENCE], token });
    expect([201, 409]).toContain(reg.status);
    const r = receipt();
    expect((await post("/v1/usage/receipts", { receipt: r })).status).toBe(201);
    const other = { authorization: `Bearer ${token}` };
    expect((await get(r.invocation_id, other)).status).toBe(404);
    expect((await post("/v1/costs/estimate", { invocation_id: r.invocation_id, price_source: SOURCE }, other)).status).toBe(404);
    // The same invocation id under the other party is that party's own record.
    expect((await post("/v1/usage/receipts", { receipt: { ...r, usage: { ...FULL, input_tokens: 1 } } }, other)).status).toBe(201);
    expect((await get(r.invocation_id)).body.receipt.usage.input_tokens).toBe(1200);
  });

  it("exports a best-effort projection after the answer; an exporter that throws changes nothing and is not retried", async () => {
    const seen: ProjectedAttributes[] = [];
    let calls = 0;
    const { post, ctx } = setup({
      exporter: (a) => {
        calls++;
        seen.push(a);
        throw new Error("exporter down");
      },
    });
    const r = receipt();
    const res = await post("/v1/usage/receipts", { receipt: r });
    expect(res.status).toBe(201);
    await waitOnExecutionContext(ctx);
    expect(calls).toBe(1);
    expect(seen[0]).toEqual({ "event.name": "model_usage", "model.provider": "openai", "usage.attribution": "attributed", "usage.pricing": "unavailable", time: 1_800_000_000 });
    expect(JSON.stringify(seen)).not.toContain(r.provider_request_id);
    const rejecting = setup({ exporter: () => Promise.reject(new Error("down")) });
    expect((await rejecting.post("/v1/usage/receipts", { receipt: receipt() })).status).toBe(201);
    await waitOnExecutionContext(rejecting.ctx);
  });
});

describe("the projection is exported after the response", () => {
  it("the exporter is not called before the answer is handed back, and is called once after (review rv-117)", async () => {
    // Before, the export ran in a microtask queued ahead of the answer, so an exporter's own time
    // (a console.log line costs ~90 µs under wrangler dev) was spent before the response left.
    const { h } = setup();
    expect((await h.call("/v1/usage?invocation_id=inv-none")).status).toBe(404); // registers the harness's relying party
    let calls = 0;
    const ctx = createExecutionContext();
    const app = createApp({ now: () => TEST_NOW, exporter: () => void calls++ });
    const res = await app.request("/v1/usage/receipts", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${RP_TOKEN}` }, body: JSON.stringify({ receipt: receipt() }) }, env, ctx);
    expect([res.status, calls]).toEqual([201, 0]);
    await waitOnExecutionContext(ctx);
    expect(calls).toBe(1);
  });
});

describe("POST /v1/costs/estimate", () => {
  it("derives from a stored receipt and stores it as the latest estimate", async () => {
    const { post, get } = setup();
    const r = receipt();
    await post("/v1/usage/receipts", { receipt: r });
    const res = await post("/v1/costs/estimate", { invocation_id: r.invocation_id, price_source: SOURCE, assumptions: ["list prices"] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stored: true, estimate: { kind: "estimated", amount: "0.0049", currency: "USD", units: { input_tokens: 1200, output_tokens: 300, cached_input_tokens: 200 }, assumptions: ["list prices"] } });
    expect((await get(r.invocation_id)).body.estimate).toEqual(res.body.estimate);
  });

  it("derives from a supplied receipt without storing anything", async () => {
    const { post, get } = setup();
    const r = receipt({ usage: { input_tokens: 1200, output_tokens: 300 }, attribution: { kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"] } });
    const res = await post("/v1/costs/estimate", { receipt: r, price_source: SOURCE });
    expect(res.body).toMatchObject({ stored: false, estimate: { kind: "partial", missing: ["total_tokens", "reasoning_tokens", "cached_input_tokens"], amount: "0.0048" } });
    expect((await get(r.invocation_id)).status).toBe(404);
  });

  it("each unavailable reason, without money", async () => {
    const { post } = setup();
    const unreported = receipt({ usage: undefined, attribution: { kind: "unavailable", reason: "not-reported" } });
    const cases: [unknown, string][] = [
      [{ receipt: unreported, price_source: SOURCE }, "incomplete-usage"],
      [{ receipt: receipt() }, "no-pricing"],
      [{ receipt: receipt(), price_source: { ...SOURCE, verified: false } }, "unverified-source"],
      [{ receipt: receipt(), price_source: { ...SOURCE, valid_until: 1_750_000_000 } }, "stale-pricing"],
    ];
    for (const [body, reason] of cases) {
      const res = await post("/v1/costs/estimate", body);
      expect(res.status).toBe(200);
      expect(res.body.estimate).toMatchObject({ kind: "unavailable", reason });
      expect(Object.keys(res.body.estimate).sort()).toEqual(["kind", "reason", "receipt"]);
    }
  });

  it("a bad price source or receipt is 400, an unknown invocation 404", async () => {
    const { post } = setup();
    expect((await post("/v1/costs/estimate", { receipt: receipt(), price_source: { ...SOURCE, per_million_tokens: { input_tokens: 2.5 } } })).body.error.code).toBe("USAGE_EVIDENCE_INVALID");
    expect((await post("/v1/costs/estimate", { receipt: receipt(), price_source: SOURCE, assumptions: "x" })).status).toBe(400);
    // Malformed assumptions are refused even where the estimate is unavailable (it carries none): before, they were dropped and answered 200.
    for (const body of [{ receipt: receipt(), assumptions: [{}] }, { receipt: receipt(), price_source: { ...SOURCE, verified: false }, assumptions: ["x".repeat(300)] }]) {
      expect((await post("/v1/costs/estimate", body)).body.error.code).toBe("USAGE_EVIDENCE_INVALID");
    }
    expect((await post("/v1/costs/estimate", { invocation_id: "inv-never", price_source: SOURCE })).status).toBe(404);
    expect((await post("/v1/costs/estimate", { price_source: SOURCE })).body.error.code).toBe("MALFORMED_REQUEST");
  });
});

describe("POST /v1/costs/estimate: a computed amount past the decimal limit", () => {
  it("is refused naming the computed amount and the 64-character limit, never as a bad `amount` the caller did not send", async () => {
    const { post } = setup();
    const huge = { ...SOURCE, per_million_tokens: { input_tokens: "9".repeat(64) } };
    const tiny = { ...SOURCE, per_million_tokens: { input_tokens: `0.${"0".repeat(61)}1` } };
    for (const [r, source] of [[receipt({ usage: { ...FULL, input_tokens: 9_000_000_000_000 } }), huge], [receipt({ usage: { ...FULL, input_tokens: 1000 } }), tiny]] as const) {
      const res = await post("/v1/costs/estimate", { receipt: r, price_source: source });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("USAGE_EVIDENCE_INVALID");
      expect(res.body.error.detail).toMatch(/computed amount .* exceeds the 64-character limit/);
      expect(res.body.error.detail).toContain("(at price_source.per_million_tokens)");
      expect(res.body.error.detail).not.toContain("(at amount)");
    }
    // Within the limit, the same long rates value smaller counts.
    const fits = await post("/v1/costs/estimate", { receipt: receipt({ usage: { ...FULL, input_tokens: 1_000_000 } }), price_source: { ...SOURCE, per_million_tokens: { input_tokens: `0.${"0".repeat(61)}1` } } });
    expect(fits.body.estimate).toMatchObject({ kind: "estimated", amount: `0.${"0".repeat(61)}1` });
  });
});

describe("POST /v1/costs/reconcile", () => {
  it("reconciles the stored estimate and stores the reconciliation; GET shows both", async () => {
    const { post, get } = setup();
    const r = receipt();
    await post("/v1/usage/receipts", { receipt: r });
    await post("/v1/costs/estimate", { invocation_id: r.invocation_id, price_source: SOURCE });
    const res = await post("/v1/costs/reconcile", { invocation_id: r.invocation_id, provider_record: record(r) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stored: true, reconciliation: { disposition: { kind: "reconciled" } } });
    expect((await get(r.invocation_id)).body.reconciliation.disposition).toEqual({ kind: "reconciled" });
  });

  it("derives divergent, unreconcilable and unavailable from supplied estimates", async () => {
    const { post } = setup();
    const r = receipt();
    const estimate = (await post("/v1/costs/estimate", { receipt: r, price_source: SOURCE })).body.estimate;
    const unavailable = (await post("/v1/costs/estimate", { receipt: r })).body.estimate;
    const disposition = async (body: unknown) => (await post("/v1/costs/reconcile", body)).body.reconciliation.disposition;
    expect(await disposition({ estimate, provider_record: record(r, { amount: "0.005" }) })).toEqual({ kind: "divergent", reason: "amount-mismatch" });
    expect(await disposition({ estimate, provider_record: record(r, { currency: "EUR" }) })).toEqual({ kind: "divergent", reason: "currency-mismatch" });
    expect(await disposition({ estimate: unavailable, provider_record: record(r) })).toEqual({ kind: "unreconcilable", reason: "estimate-unavailable" });
    expect(await disposition({ estimate })).toEqual({ kind: "unavailable", reason: "no-provider-record" });
    expect(await disposition({ estimate, pending: true })).toEqual({ kind: "unavailable", reason: "pending" });
  });

  it("a contradicting provider identity is 400 EVIDENCE_IDENTITY_MISMATCH and stores nothing", async () => {
    const { post, get } = setup();
    const r = receipt();
    await post("/v1/usage/receipts", { receipt: r });
    await post("/v1/costs/estimate", { invocation_id: r.invocation_id, price_source: SOURCE });
    for (const extra of [{ provider: "anthropic" }, { provider_request_id: "req_someone_else" }]) {
      const res = await post("/v1/costs/reconcile", { invocation_id: r.invocation_id, provider_record: record(r, extra) });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("EVIDENCE_IDENTITY_MISMATCH");
    }
    expect((await get(r.invocation_id)).body.reconciliation).toBeNull();
  });

  it("refuses money on an unavailable estimate, an asserted estimate that lies, pending with a record, and a stored receipt without an estimate", async () => {
    const { post } = setup();
    const r = receipt();
    const unavailable = (await post("/v1/costs/estimate", { receipt: r })).body.estimate;
    expect((await post("/v1/costs/reconcile", { estimate: { ...unavailable, amount: "0", currency: "USD" } })).body.error.code).toBe("USAGE_EVIDENCE_INVALID");
    const estimate = (await post("/v1/costs/estimate", { receipt: r, price_source: SOURCE })).body.estimate;
    expect((await post("/v1/costs/reconcile", { estimate: { ...estimate, units: { ...estimate.units, input_tokens: 1 } } })).body.error.code).toBe("USAGE_EVIDENCE_INVALID");
    expect((await post("/v1/costs/reconcile", { estimate, pending: true, provider_record: record(r) })).body.error.code).toBe("MALFORMED_REQUEST");
    await post("/v1/usage/receipts", { receipt: r });
    const none = await post("/v1/costs/reconcile", { invocation_id: r.invocation_id, provider_record: record(r) });
    expect(none.status).toBe(404);
  });
});

describe("null members, conflict details and time bounds", () => {
  it("null in a body member is the same as leaving it out, on every usage route", async () => {
    const { post } = setup();
    const r = receipt();
    const stored = await post("/v1/usage/receipts", { receipt: r, observed: null, journal_record: null, cache: null, budget_decisions: null });
    expect(stored.status, JSON.stringify(stored.body)).toBe(201);
    expect(stored.body).toMatchObject({ journal_record: null, cache: null, budget_decisions: [] });
    // The answer's parts can be sent back as they are: the same body again.
    const again = await post("/v1/usage/receipts", { receipt: r, journal_record: stored.body.journal_record, cache: stored.body.cache, budget_decisions: stored.body.budget_decisions });
    expect([again.status, again.body.stored]).toEqual([200, false]);
    const estimate = await post("/v1/costs/estimate", { invocation_id: r.invocation_id, receipt: null, price_source: SOURCE, assumptions: null });
    expect(estimate.status).toBe(200);
    const reconciled = await post("/v1/costs/reconcile", { invocation_id: r.invocation_id, estimate: null, provider_record: null, pending: null });
    expect(reconciled.body.reconciliation.disposition).toEqual({ kind: "unavailable", reason: "no-provider-record" });
    // Both alternatives null is neither.
    expect((await post("/v1/usage/receipts", { receipt: null, observed: null })).body.error.code).toBe("MALFORMED_REQUEST");
    // Inside a record, null is still refused.
    expect((await post("/v1/usage/receipts", { receipt: { ...receipt(), provider_request_id: null } })).body.error.code).toBe("USAGE_EVIDENCE_INVALID");
  });

  it("a conflict says what differs: the same receipt with other budget decisions is not 'another usage receipt'", async () => {
    const { post } = setup();
    const r = receipt();
    expect((await post("/v1/usage/receipts", { receipt: r })).status).toBe(201);
    const decision = { invocation_id: r.invocation_id, decision: "warn", phase: "after-invocation", limit: { name: "daily", metric: "total_tokens", threshold: "1000" }, decided_at: 1_800_000_001 };
    const more = await post("/v1/usage/receipts", { receipt: r, budget_decisions: [decision] });
    expect(more.status).toBe(409);
    expect(more.body.error.code).toBe("USAGE_RECORD_CONFLICT");
    expect(more.body.error.detail).toContain("stored with another budget_decisions");
    expect(more.body.error.detail).not.toContain("another usage receipt");
    const both = await post("/v1/usage/receipts", { receipt: { ...r, usage: { ...FULL, output_tokens: 301 } }, cache: { kind: "miss" } });
    expect(both.body.error.detail).toContain("another usage receipt");
  });

  it("a retry that writes a stored decision's threshold as another equal decimal is the same call, not a conflict", async () => {
    const { post, get } = setup();
    const r = receipt();
    const decision = (threshold: string) => ({ invocation_id: r.invocation_id, decision: "allow", phase: "before-invocation", limit: { name: "daily", metric: "cost", threshold, currency: "USD" }, decided_at: 1_800_000_001 });
    expect((await post("/v1/usage/receipts", { receipt: r, budget_decisions: [decision("1.50")] })).status).toBe(201);
    const retry = await post("/v1/usage/receipts", { receipt: r, budget_decisions: [decision("1.5")] });
    expect([retry.status, retry.body.stored], JSON.stringify(retry.body)).toEqual([200, false]);
    // What was stored is kept as it was written, and answered so.
    expect(retry.body.budget_decisions[0].limit.threshold).toBe("1.50");
    expect((await get(r.invocation_id)).body.budget_decisions[0].limit.threshold).toBe("1.50");
    // Another threshold is another decision, and the decisions with something else changed still conflict.
    expect((await post("/v1/usage/receipts", { receipt: r, budget_decisions: [decision("1.51")] })).body.error.code).toBe("USAGE_RECORD_CONFLICT");
    expect((await post("/v1/usage/receipts", { receipt: r, cache: { kind: "miss" }, budget_decisions: [decision("1.5")] })).body.error.code).toBe("USAGE_RECORD_CONFLICT");
  });

  it("observed_at is Unix seconds: milliseconds (10^11 or more) and a time beyond the skew ahead of now are refused", async () => {
    const { post, get } = setup();
    for (const observed_at of [4_102_444_800_000, 1e11, TEST_NOW + 31]) {
      const r = receipt({ observed_at });
      const res = await post("/v1/usage/receipts", { receipt: r });
      expect([res.status, res.body.error?.code], String(observed_at)).toEqual([400, "USAGE_EVIDENCE_INVALID"]);
      expect((await get(r.invocation_id)).status).toBe(404);
    }
    const viaObserved = await post("/v1/usage/receipts", { observed: { invocation_id: "inv-ms", observed_at: 1_900_000_000_000, response: { status: "completed", model: { profile: MODEL } } } });
    expect(viaObserved.body.error.detail).toMatch(/milliseconds/);
    expect((await post("/v1/usage/receipts", { receipt: receipt({ observed_at: TEST_NOW + 30 }) })).status).toBe(201);
  });
});

describe("no double counting", () => {
  const estimated = async (post: ReturnType<typeof setup>["post"], r: ReturnType<typeof receipt>) => {
    expect((await post("/v1/usage/receipts", { receipt: r })).status).toBe(201);
    expect((await post("/v1/costs/estimate", { invocation_id: r.invocation_id, price_source: SOURCE })).status).toBe(200);
  };

  it("one provider record reconciles one invocation of a party: a second is 409 PROVIDER_RECORD_IN_USE until the first is re-estimated", async () => {
    const { post, get } = setup();
    const a = receipt({ provider_request_id: "req_shared" });
    const b = receipt({ provider_request_id: "req_shared" });
    await estimated(post, a);
    await estimated(post, b);
    const shared = record(a);
    expect((await post("/v1/costs/reconcile", { invocation_id: a.invocation_id, provider_record: shared })).body.reconciliation.disposition).toEqual({ kind: "reconciled" });
    const twice = await post("/v1/costs/reconcile", { invocation_id: b.invocation_id, provider_record: shared });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe("PROVIDER_RECORD_IN_USE");
    expect(twice.body.error.detail).toContain(a.invocation_id);
    // Another amount or export citing the same provider request is still the same call.
    expect((await post("/v1/costs/reconcile", { invocation_id: b.invocation_id, provider_record: record(a, { amount: "1", evidence_ref: { id: "export-2", digest: DIGEST } }) })).body.error.code).toBe("PROVIDER_RECORD_IN_USE");
    // Nor does leaving the request id out of the record: the receipt it reconciles names the call.
    const { provider_request_id: _dropped, ...unnamed } = shared;
    expect((await post("/v1/costs/reconcile", { invocation_id: b.invocation_id, provider_record: unnamed })).body.error.code).toBe("PROVIDER_RECORD_IN_USE");
    expect((await get(b.invocation_id)).body.reconciliation).toBeNull();
    // The same invocation again is fine; the same estimate of the first again is a retry and keeps
    // the record held (a late retry must not free it); a new estimate of the first releases it.
    expect((await post("/v1/costs/reconcile", { invocation_id: a.invocation_id, provider_record: shared })).status).toBe(200);
    expect((await post("/v1/costs/estimate", { invocation_id: a.invocation_id, price_source: SOURCE })).status).toBe(200);
    expect((await get(a.invocation_id)).body.reconciliation).not.toBeNull();
    expect((await post("/v1/costs/reconcile", { invocation_id: b.invocation_id, provider_record: shared })).body.error?.code).toBe("PROVIDER_RECORD_IN_USE");
    expect((await post("/v1/costs/estimate", { invocation_id: a.invocation_id, price_source: { ...SOURCE, version: "2025-07" } })).status).toBe(200);
    expect((await get(a.invocation_id)).body.reconciliation).toBeNull();
    expect((await post("/v1/costs/reconcile", { invocation_id: b.invocation_id, provider_record: shared })).status).toBe(200);
    // A record without a request id is identified by all of it.
    const c = receipt({ provider_request_id: undefined });
    const d = receipt({ provider_request_id: undefined });
    await estimated(post, c);
    await estimated(post, d);
    const { provider_request_id: _none, ...anonymous } = record(a, { evidence_ref: { id: "export-anon", digest: DIGEST } });
    expect((await post("/v1/costs/reconcile", { invocation_id: c.invocation_id, provider_record: anonymous })).status).toBe(200);
    expect((await post("/v1/costs/reconcile", { invocation_id: d.invocation_id, provider_record: anonymous })).body.error.code).toBe("PROVIDER_RECORD_IN_USE");
    // Its amount is a decimal, so trailing zeros do not make it another record ("1.50" is "1.5"): it was reconciled twice.
    for (const amount of [`${anonymous.amount}0`, `${anonymous.amount}000`]) {
      expect((await post("/v1/costs/reconcile", { invocation_id: d.invocation_id, provider_record: { ...anonymous, amount } })).body.error?.code).toBe("PROVIDER_RECORD_IN_USE");
    }
    expect((await post("/v1/costs/reconcile", { invocation_id: d.invocation_id, provider_record: { ...anonymous, amount: "0.005" } })).status).toBe(200);
  });

  it("a ledger created before the provider_record column learns the records its reconciliations already carry", async () => {
    const stub = usageLedger(env, "pre-migration-party");
    const shared = record({ provider_request_id: "req_old" });
    await runInDurableObject(stub, (_o: UsageLedger, state) => {
      state.storage.sql.exec(`CREATE TABLE usage (invocation_id TEXT PRIMARY KEY, receipt TEXT NOT NULL, attribution TEXT NOT NULL, journal_record TEXT, cache TEXT, budget_decisions TEXT NOT NULL,
        estimate TEXT, estimate_kind TEXT, reconciliation TEXT, reconciliation_kind TEXT, stored_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID`);
      for (const id of ["old-a", "old-b"]) state.storage.sql.exec("INSERT INTO usage VALUES (?, '{}', 'attributed', NULL, NULL, '[]', 'E', 'estimated', ?, ?, 1, 1)", id, id === "old-a" ? JSON.stringify({ provider_record: shared }) : null, id === "old-a" ? "reconciled" : null);
    });
    const key = providerRecordKey(createProviderCostRecord(shared));
    const result = await runInDurableObject(stub, (o: UsageLedger) => o.recordReconciliation("old-b", "E", "{}", "reconciled", key, 2));
    expect(result).toEqual({ kind: "claimed", by: "old-a" });
  });

  it("the same budget decision twice is 400 USAGE_EVIDENCE_INVALID and nothing is stored", async () => {
    const { post, get } = setup();
    const r = receipt();
    const decision = { invocation_id: r.invocation_id, decision: "warn", phase: "after-invocation", limit: { name: "daily", metric: "total_tokens", threshold: "1000" }, decided_at: 1_800_000_001 };
    const res = await post("/v1/usage/receipts", { receipt: r, budget_decisions: [decision, { ...decision, decided_at: 1_800_000_002 }, decision] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "USAGE_EVIDENCE_INVALID", detail: expect.stringContaining("budget_decisions[2] repeats budget_decisions[0]") });
    expect((await get(r.invocation_id)).status).toBe(404);
    // A cost threshold is a decimal: "1.5" and "1.50" are one limit, so the decision is the same one (it was stored twice).
    const cost = { ...decision, limit: { name: "daily-spend", metric: "cost", threshold: "1.5", currency: "USD" } };
    const again = await post("/v1/usage/receipts", { receipt: r, budget_decisions: [cost, { ...cost, limit: { ...cost.limit, threshold: "1.50" } }] });
    expect([again.status, again.body.error?.code]).toEqual([400, "USAGE_EVIDENCE_INVALID"]);
    expect(again.body.error.detail).toContain("budget_decisions[1] repeats budget_decisions[0]");
    expect((await get(r.invocation_id)).status).toBe(404);
  });

  it("flags budget evidence that sits oddly beside the receipt, on the store and on every read, without refusing it", async () => {
    const { post, get } = setup();
    const r = receipt();
    const limit = (threshold: string) => ({ name: "per-call", metric: "total_tokens", threshold });
    const decide = (decision: string, phase: string, threshold: string) => ({ invocation_id: r.invocation_id, decision, phase, limit: limit(threshold), decided_at: 1_800_000_001 });
    const decisions = [
      decide("allow", "after-invocation", "1000"), // observed 1500: allowed over the threshold
      decide("overrun", "after-invocation", "1000000"), // observed 1500: no overrun this receipt shows
      decide("warn", "after-invocation", "1000"),
      decide("allow", "before-invocation", "1000"),
      decide("overrun", "after-invocation", "1499"),
      decide("allow", "after-invocation", "1500"),
    ];
    const stored = await post("/v1/usage/receipts", { receipt: r, budget_decisions: decisions });
    expect(stored.status).toBe(201);
    const flags = [
      { index: 0, flag: "allow-over-threshold", metric: "total_tokens", observed: 1500, threshold: "1000" },
      { index: 1, flag: "overrun-within-threshold", metric: "total_tokens", observed: 1500, threshold: "1000000" },
    ];
    expect(stored.body.budget_flags).toEqual(flags);
    expect((await get(r.invocation_id)).body.budget_flags).toEqual(flags);
    const plain = receipt();
    expect((await post("/v1/usage/receipts", { receipt: plain })).body.budget_flags).toEqual([]);
  });
});

describe("GET /v1/usage and the status counts", () => {
  it("needs exactly one well-formed invocation_id", async () => {
    const { h } = setup();
    for (const path of ["/v1/usage", "/v1/usage?invocation_id=a&invocation_id=b", "/v1/usage?invocation_id=has%20space", "/v1/usage?invocation_id=a&x=1", "/v1/usage?invocation_id=a&=5", "/v1/usage?invocation_id=a&=", "/v1/usage?invocation_id=a&y=%ff"]) {
      const res = await h.call(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("counts receipts by attribution, estimates by kind and reconciliations by disposition; an unknown party's object stays empty", async () => {
    const { post } = setup();
    const a = receipt();
    const p = receipt({ usage: { input_tokens: 1 }, attribution: { kind: "partial", missing: ["output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"] } });
    await post("/v1/usage/receipts", { receipt: a });
    await post("/v1/usage/receipts", { receipt: p });
    await post("/v1/costs/estimate", { invocation_id: a.invocation_id, price_source: SOURCE });
    await post("/v1/costs/reconcile", { invocation_id: a.invocation_id, provider_record: record(a, { amount: "1" }) });
    const registered = (await env.ANCHORS.get<RelyingParty>(`rp:${RP_NAME}`, "json"))!;
    const counts = await readUsageCounts(env, [partyScope(registered), "nobody-stored-anything"], 2000);
    expect(counts.receipts).toBeGreaterThanOrEqual(2);
    expect(counts.attribution.attributed).toBeGreaterThanOrEqual(1);
    expect(counts.attribution.partial).toBeGreaterThanOrEqual(1);
    expect(counts.estimates.estimated).toBeGreaterThanOrEqual(1);
    expect(counts.reconciliation.divergent).toBeGreaterThanOrEqual(1);
    const empty = await runInDurableObject(usageLedger(env, "nobody-stored-anything"), (_o: UsageLedger, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'usage'").one().n);
    expect(empty).toBe(0);
  });
});
