/**
 * Logs and request ids: one JSON line per decision with the route, issuer, decision, codes,
 * latency and request id, and nothing of the receipt, the token or the keys; every answer
 * carries X-Request-Id (the cf-ray when there is a well-formed one).
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { harness, issuerFor, RP_TOKEN } from "../support/app-harness.js";

afterEach(() => vi.restoreAllMocks());

const decisionLines = (spy: { mock: { calls: unknown[][] } }) =>
  spy.mock.calls
    .map((args) => String(args[0]))
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.event === "decision");

describe("a decision's log line", () => {
  it("is exactly one JSON line with route, issuer, decision, codes, latency and request id, and no receipt, signature or token", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("log-line");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    const log = vi.spyOn(console, "log");
    const res = await h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", "cf-ray": "8f1e2d3c4b5a6978-AMS" }, body: JSON.stringify(body) });
    expect(res.body.decision).toBe("accept");
    const lines = decisionLines(log);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toEqual({
      event: "decision",
      request_id: "8f1e2d3c4b5a6978-AMS",
      route: "/v1/receipts/verify",
      mode: "enforce",
      issuer: issuer.id.issuer,
      issuer_pinned: true,
      decision: "accept",
      valid: true,
      codes: ["ACCEPTED"],
      status: 200,
      latency_ms: expect.any(Number),
    });
    expect(res.headers.get("x-request-id")).toBe("8f1e2d3c4b5a6978-AMS");
    const everything = log.mock.calls.map((args) => args.map(String).join(" ")).join("\n");
    for (const secret of [body.receipt.signature, body.receipt.nonce, RP_TOKEN, issuer.anchor.keys[0].public_key, "acct-7731"]) expect(everything).not.toContain(secret);
  });

  it("names a refused decision's codes, an audit and a malformed receipt too, one line each", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("log-line-refused");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    await h.verify(body);
    const log = vi.spyOn(console, "log");
    await h.verify(body);
    await h.verify({ ...body, mode: "audit", request: undefined });
    const malformed = await h.verify({ ...body, receipt: { ...body.receipt, surprise: 1 } });
    expect(malformed.status).toBe(400);
    const lines = decisionLines(log);
    expect(lines.map(({ mode, decision, codes, status }) => ({ mode, decision, codes, status }))).toEqual([
      { mode: "enforce", decision: "reject", codes: ["REPLAY_DETECTED"], status: 200 },
      { mode: "audit", decision: "audit", codes: ["REPLAY_DETECTED"], status: 200 },
      { mode: "enforce", decision: "reject", codes: ["MALFORMED_RECEIPT"], status: 400 },
    ]);
    expect(new Set(lines.map((l) => l.request_id)).size).toBe(3);
  });

  it("a receipt the strict parser refuses (a duplicate key, nesting past the limit) is a decision too: one line each, in its mode", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("log-line-unparsed");
    await h.pin(issuer.anchor);
    const body = await issuer.body();
    const text = JSON.stringify(body);
    const duplicate = text.replace('"nonce":', '"nonce":"00000000000000000000000000000000","nonce":');
    let deep: unknown = 1;
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const log = vi.spyOn(console, "log");
    const post = (t: string) => h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json" }, body: t });
    const answers = [await post(duplicate), await post(JSON.stringify({ ...body, mode: "audit", request: undefined, receipt: { ...body.receipt, extra: deep } }))];
    expect(answers.map((a) => [a.status, a.body.error.code, a.body.decision, a.body.mode])).toEqual([
      [400, "MALFORMED_RECEIPT", "reject", "enforce"],
      [400, "MALFORMED_RECEIPT", "audit", "audit"],
    ]);
    expect(decisionLines(log).map(({ mode, decision, codes, status }) => ({ mode, decision, codes, status }))).toEqual([
      { mode: "enforce", decision: "reject", codes: ["MALFORMED_RECEIPT"], status: 400 },
      { mode: "audit", decision: "audit", codes: ["MALFORMED_RECEIPT"], status: 400 },
    ]);
  });

  it("a malformed call (not a decision on a receipt) writes no decision line", async () => {
    const h = harness(env, createExecutionContext());
    const log = vi.spyOn(console, "log");
    const res = await h.call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json" }, body: '{"audience":1}' });
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    expect(decisionLines(log)).toEqual([]);
  });

  it("every answer carries a request id; a cf-ray that is not of its form is replaced by a random one", async () => {
    const h = harness(env, createExecutionContext());
    const health = await h.call("/healthz", { headers: { "cf-ray": "<script>" } });
    expect(health.headers.get("x-request-id")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    const refused = await h.call("/v1/admin/stats", { headers: { "cf-ray": "abc-LHR" } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("x-request-id")).toBe("abc-LHR");
  });

  it("an intake that fails on our side is logged once with the request id its answer carries, so the two can be matched", async () => {
    const h = harness({ ...env, MANIFEST_TTL: "100" } as typeof env, createExecutionContext());
    const failed = vi.spyOn(console, "error");
    const command = { intake_version: "1.3", agent_id: "log-agent", tool: "search_web", params: { query: "x" }, timestamp: 1_796_000_000, trace_id: "00000000000c0ffe" };
    const res = await h.call("/v1/intake", { method: "POST", headers: { "content-type": "application/json", "cf-ray": "8f1e2d3c4b5a6979-AMS" }, body: JSON.stringify(command) });
    expect([res.status, res.body.error.code]).toEqual([500, "INTAKE_FAILED"]);
    const lines = failed.mock.calls.map((args) => String(args[0])).filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((l) => l.event === "intake_failed")).toEqual([
      { event: "intake_failed", request_id: "8f1e2d3c4b5a6979-AMS", path: "/v1/intake", error: expect.stringContaining("MANIFEST_TTL") },
    ]);
  });
});

describe("a failure's log line names no relying party", () => {
  it("DELETE /v1/admin/relying-parties/{name} answered 503 logs the route with {name}, not the name", async () => {
    const down = () => Promise.reject(new Error("kv down"));
    const kv = { get: down, getWithMetadata: down, put: down, delete: down, list: down } as unknown as KVNamespace;
    // The delete is made by the AdminRegistry object, which reads KV with its own bindings: its KV is down too.
    const registry = { idFromName: () => ({}), get: () => ({ deleteParty: down }) } as unknown as typeof env.ADMIN_REGISTRY;
    const h = harness({ ...env, ANCHORS: kv, ADMIN_REGISTRY: registry } as typeof env, createExecutionContext());
    const failed = vi.spyOn(console, "error");
    const res = await h.admin("DELETE", "/v1/admin/relying-parties/payments-executor-7");
    expect([res.status, res.body.error.code]).toEqual([503, "VERIFIER_UNAVAILABLE"]);
    const lines = failed.mock.calls.map((args) => String(args[0])).filter((line) => line.includes("request_failed"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("payments-executor-7");
    expect(JSON.parse(lines[0]).path).toBe("/v1/admin/relying-parties/{name}");
    failed.mockRestore();
  });
});

describe("DecisionStats books each count under the minute it was counted in", () => {
  it("an earlier minute stays earlier; a minute ahead is booked now; one past the 24 h retention is dropped", async () => {
    const stats = env.DECISION_STATS.get(env.DECISION_STATS.idFromName("minute-booking"));
    const now = Math.floor(Date.now() / 60_000);
    const at = (minute: number, code: string) => ({ minute, label: "https://minutes.example", code, n: 2 });
    await stats.add({
      codes: [at(now - 7, "LATE_FLUSH"), at(now + 30, "AHEAD"), at(now - 24 * 60 - 5, "TOO_OLD")],
      decisions: [{ minute: now - 7, label: "https://minutes.example", n: 2 }],
      verdicts: [],
      chainsStarted: 0,
    });
    const view = await stats.read(60);
    const late = view.per_minute.find((m) => m.counts.LATE_FLUSH);
    expect(late).toEqual({ minute: (now - 7) * 60, counts: { LATE_FLUSH: 2 } });
    const ahead = view.per_minute.find((m) => m.counts.AHEAD);
    expect(ahead?.minute).toBeGreaterThanOrEqual(now * 60);
    expect(JSON.stringify(view)).not.toContain("TOO_OLD");
    const series = await stats.series(60, 8);
    expect(series.byLabel["https://minutes.example"].reduce((a, b) => a + b, 0)).toBe(2);
  });
});

describe("a body the caller did not send in full", () => {
  it("is a 400 of the call (INTAKE_MALFORMED at intake), not a fault of ours: no request_failed or intake_failed line", async () => {
    // Review rv-103: a Content-Length longer than the body sent, the client then gone, failed the
    // body's read, answered 500 INTERNAL_ERROR and logged request_failed ("Network connection lost").
    const h = harness(env, createExecutionContext());
    const cut = () =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"idempotency_key":"k'));
          controller.error(new Error("Network connection lost."));
        },
      });
    const failed = vi.spyOn(console, "error");
    for (const [path, code] of [["/v1/journal/reserve", "MALFORMED_REQUEST"], ["/v1/intake", "INTAKE_MALFORMED"], ["/v1/usage/receipts", "MALFORMED_REQUEST"]] as const) {
      for (const headers of [{ "content-type": "application/json", "content-length": "500" }, { "content-type": "application/json" }]) {
        const init = { method: "POST", headers, body: cut(), duplex: "half" } as RequestInit;
        const res = await h.call(path, init);
        expect([res.status, res.body?.error?.code], `${path} ${JSON.stringify(headers)}: ${res.text}`).toEqual([400, code]);
      }
    }
    const lines = failed.mock.calls.map((args) => String(args[0])).filter((line) => line.includes("request_failed") || line.includes("intake_failed"));
    expect(lines).toEqual([]);
    failed.mockRestore();
  });
});
