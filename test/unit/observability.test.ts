import { describe, expect, it } from "vitest";
import { DecisionCounter, minuteOf, UNPINNED } from "../../worker/metrics.js";
import { PROJECTED_ATTRIBUTES, PROJECTION_POLICY, projectModelUsage, projectToolExecutionEvent, type ToolExecutionEvent } from "../../worker/protocol/observability.js";
import { createUsageReceipt } from "../../worker/protocol/usage/receipt.js";

/** Every value an event may hold that must never leave through the projection, each a unique marker. */
const event = (): ToolExecutionEvent => ({
  event_id: "evt-1",
  tool: "payments.refund",
  state: "succeeded",
  effect: "applied",
  occurred_at: 1_800_000_000,
  trace_id: "0123456789abcdef",
  idempotency_key: "SECRET-IDEMPOTENCY",
  action_digest: "sha256:SECRET-ACTION-DIGEST",
  evidence_refs: [{ id: "SECRET-EVIDENCE-REF", digest: "sha256:x" }],
  extensions: { "com.example.provider": { requestId: "SECRET-EXTENSION" } },
  provider: { request_id: "SECRET-PROVIDER-REQUEST", headers: { "x-ratelimit": "SECRET-HEADER" } },
  credentials: { token: "SECRET-CREDENTIAL" },
  authorization: "Bearer SECRET-BEARER",
});

describe("the observability projection", () => {
  it("projects a fixed safe attribute set", () => {
    expect(projectToolExecutionEvent(event())).toEqual({
      "event.name": "tool_execution",
      "event.id": "evt-1",
      "tool.name": "payments.refund",
      "tool.execution.state": "succeeded",
      "tool.execution.effect": "applied",
      trace_id: "0123456789abcdef",
      time: 1_800_000_000,
    });
  });

  it("never carries extensions, evidence refs, action digests, provider metadata or credentials", () => {
    const text = JSON.stringify(projectToolExecutionEvent(event()));
    expect(text).not.toMatch(/SECRET/);
    for (const key of Object.keys(projectToolExecutionEvent(event()))) expect(PROJECTED_ATTRIBUTES).toContain(key);
  });

  it("leaves out a fact not in its expected form instead of copying it raw", () => {
    const smuggled = projectToolExecutionEvent({ ...event(), tool: "refund Bearer SECRET", state: "SECRET" as never, trace_id: "SECRET", event_id: { id: "SECRET" } as never });
    expect(JSON.stringify(smuggled)).not.toMatch(/SECRET/);
    expect(smuggled["tool.name"]).toBeUndefined();
  });

  it("says whose journal recorded the step, only as one of its two names", () => {
    expect(projectToolExecutionEvent({ ...event(), journal: "relying_party" })["tool.execution.journal"]).toBe("relying_party");
    expect(projectToolExecutionEvent({ ...event(), journal: "intake" })["tool.execution.journal"]).toBe("intake");
    expect(projectToolExecutionEvent({ ...event(), journal: "SECRET" as never })).not.toHaveProperty("tool.execution.journal");
  });

  it("reads no accessor: a getter on the event is never called", () => {
    let called = false;
    const e = Object.defineProperty(event(), "tool", { get: () => ((called = true), "x"), enumerable: true });
    expect(projectToolExecutionEvent(e)["tool.name"]).toBeUndefined();
    expect(called).toBe(false);
  });

  it("a usage receipt projects its kinds and provider, never its request id or counts", () => {
    const receipt = createUsageReceipt({ invocation_id: "inv-SECRET", observed_at: 1, model: { provider: "openai", model: "m" }, provider_request_id: "req_SECRET", usage: { input_tokens: 987654 }, attribution: { kind: "partial", missing: ["output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens"] }, pricing: { kind: "unavailable", reason: "not-provided" } });
    const projected = projectModelUsage(receipt);
    expect(projected).toEqual({ "event.name": "model_usage", "model.provider": "openai", "usage.attribution": "partial", "usage.pricing": "unavailable", time: 1 });
    expect(JSON.stringify(projected)).not.toMatch(/SECRET|987654/);
  });

  it("declares its sampling, redaction, delivery and retention", () => {
    expect(PROJECTION_POLICY).toEqual({ sampling: "all", redaction: "allowlist", delivery: "best-effort-once", retention: "exporter" });
  });
});

describe("decision counts batched in an isolate", () => {
  it("a quiet isolate flushes on its next decision, and each count carries the minute it was counted in", () => {
    let now = 1_800_000_000_000;
    const counter = new DecisionCounter({ everyMs: 10_000, everyDecisions: 1_000 }, () => now);
    expect(counter.count("https://issuer.example", ["ACCEPTED"], "allow")).toBeNull();
    now += 5_000;
    expect(counter.count("https://issuer.example", ["ACCEPTED"], "allow")).toBeNull();
    // Ten quiet minutes: nothing is flushed without a decision, and the next one flushes the lot.
    now += 10 * 60_000;
    const batch = counter.count(UNPINNED, ["MALFORMED_RECEIPT"]);
    const first = minuteOf(1_800_000_000_000);
    const later = minuteOf(now);
    expect(later - first).toBe(10);
    expect(batch?.codes).toEqual([
      { minute: first, label: "https://issuer.example", code: "ACCEPTED", n: 2 },
      { minute: later, label: UNPINNED, code: "MALFORMED_RECEIPT", n: 1 },
    ]);
    expect(batch?.decisions).toEqual([{ minute: first, label: "https://issuer.example", n: 2 }, { minute: later, label: UNPINNED, n: 1 }]);
    expect(counter.labels()).toBe(0);
  });

  it("the review flags (CCS 13.7): a fresh isolate waits for them once; later they are read again in the background once a flush interval old, and a failed read is not retried within it", async () => {
    // Review rv-118: only a flush taught them, so a fresh isolate judged a flagged issuer by its declared class.
    let now = 1_800_000_000_000;
    const counter = new DecisionCounter({ everyMs: 10_000, everyDecisions: 1_000 }, () => now);
    let reads = 0;
    let answer: string[] | null = ["https://flagged.example"];
    const load = async () => (reads++, answer);
    const background: Promise<void>[] = [];
    const first = counter.refreshReview(load, (p) => background.push(p));
    expect(first).not.toBeNull();
    expect(counter.refreshReview(load, (p) => background.push(p))).toBe(first); // one read for the calls waiting together
    await first;
    expect([reads, counter.flagged("https://flagged.example"), background.length]).toEqual([1, true, 0]);
    now += 9_999;
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    expect(reads).toBe(1);
    // An isolate that never flushes (audit calls only) reads them again, without holding the decision.
    now += 1;
    answer = [];
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    await Promise.all(background);
    expect([reads, counter.flagged("https://flagged.example")]).toEqual([2, false]);
    // A read that failed keeps what was known and is not tried again before the interval has passed.
    now += 10_000;
    answer = null;
    counter.learnReview(["https://flagged.example"]);
    now += 10_000;
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    await Promise.all(background);
    expect([reads, counter.flagged("https://flagged.example")]).toEqual([3, true]);
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    expect(reads).toBe(3);
    // A flush teaches them too: no read within the interval after it.
    now += 10_000;
    counter.learnReview([]);
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    expect(reads).toBe(3);
  });

  it("the review flags never read: a failed first read is tried again at the next call; calls with a class floor wait for it, the others do not", async () => {
    // A failed first read was taken as learned: the isolate judged every issuer by its declared class for a whole interval.
    let now = 1_800_000_000_000;
    const counter = new DecisionCounter({ everyMs: 10_000, everyDecisions: 1_000 }, () => now);
    let reads = 0;
    let answer: string[] | null = null;
    const load = async () => (reads++, answer);
    const background: Promise<void>[] = [];
    const first = counter.refreshReview(load, (p) => background.push(p));
    expect(first).not.toBeNull();
    await first;
    expect([reads, counter.reviewKnown(), background.length]).toEqual([1, false, 0]);
    // A call without a floor goes on; a second later the read is tried again beside it.
    now += 1_000;
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    await Promise.all(background);
    expect([reads, counter.reviewKnown(), background.length]).toEqual([2, false, 1]);
    // A call with a floor waits for its own read, at once: no interval.
    const floored = counter.refreshReview(load, (p) => background.push(p), true);
    expect(floored).not.toBeNull();
    await floored;
    expect([reads, counter.reviewKnown()]).toEqual([3, false]);
    answer = ["https://flagged.example"];
    await counter.refreshReview(load, (p) => background.push(p), true);
    expect([reads, counter.reviewKnown(), counter.flagged("https://flagged.example")]).toEqual([4, true, true]);
    expect(counter.refreshReview(load, (p) => background.push(p), true)).toBeNull();
    expect(reads).toBe(4);
  });

  it("the review flags never read: calls without a floor retry a failed read at most once a second, those with one at once", async () => {
    // Each call without a floor started a read of a DecisionStats that failed: one read per call, in every fresh isolate.
    let now = 1_800_000_000_000;
    const counter = new DecisionCounter({ everyMs: 10_000, everyDecisions: 1_000 }, () => now);
    let reads = 0;
    const load = async () => (reads++, null);
    const background: Promise<void>[] = [];
    await counter.refreshReview(load, (p) => background.push(p));
    for (let i = 0; i < 50; i++) {
      expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
      await Promise.all(background);
      now += 10;
    }
    expect(reads).toBe(1);
    now += 500;
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    await Promise.all(background);
    expect(counter.refreshReview(load, (p) => background.push(p))).toBeNull();
    await Promise.all(background);
    expect(reads).toBe(2);
    // A call with a floor is refused unless a read answers, so it reads at once.
    await counter.refreshReview(load, (p) => background.push(p), true);
    expect([reads, counter.reviewKnown()]).toEqual([3, false]);
  });
});
