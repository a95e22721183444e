/**
 * Row ids are the caller's strings: a row named like Object.prototype's accessor (`__proto__`) is
 * a row like any other, in a bundle built with it and in the replay report's row digests.
 */
import { describe, expect, it } from "vitest";
import { buildBundle, replayBundle, resealBundle, type Bundle } from "../../worker/protocol/ec/bundle.js";
import { versionOf, type Corpus } from "../../worker/protocol/ec/corpus.js";
import { referenceTo } from "../../worker/protocol/ec/evidence.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { EC_LIMITS } from "../../worker/protocol/ec/limits.js";
import { issueEcReceipt } from "../../worker/protocol/ec/receipt.js";

const ev = (fields: Partial<TraceEvent> & Pick<TraceEvent, "action_id" | "action_type">): TraceEvent => ({ tool: null, input: null, output: null, doc_id: null, doc_version: null, access: null, claim_id: null, attempt: null, ...fields });
const CLAIM = "Alpha beta gamma";
const ledger = { max_calls: 9, calls: 9, max_declared_tokens: 9, declared_tokens: 9, verifier_calls: 1, termination: "answered" as const };

async function execution(runId: string, receiptRunId = runId) {
  const text = `${CLAIM}.`;
  const corpus: Corpus = { d: { text, spans: { s: { start: 0, end: CLAIM.length } } } };
  const events = [ev({ action_id: "t0", action_type: "retrieval", doc_id: "d", doc_version: await versionOf(text), access: "granted" }), ev({ action_id: "a", action_type: "answer", output: CLAIM })];
  const receipt = await issueEcReceipt({ policy_id: "p", run_id: receiptRunId, claim_id: "c1", claim: CLAIM, emission_anchor: 1, evidence: [await referenceTo(corpus, "d", "s")], corpus, events });
  return { corpus, run: { run_id: runId, record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events, receipts: [receipt], budget_ledger: ledger } };
}

describe("a row named __proto__", () => {
  it("is kept as an own row of a bundle built with it", async () => {
    const { corpus, run } = await execution("__proto__");
    const bundle = await buildBundle(corpus, [run]);
    expect(Object.hasOwn(bundle.rows, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(bundle.rows)).toBe(Object.prototype);
    const report = await replayBundle(JSON.parse(JSON.stringify(bundle)), { limits: EC_LIMITS });
    expect(report.decision).toBe("match");
  });

  it("has its digest in the replay report like any other row (it was left out)", async () => {
    const { corpus, run } = await execution("RUN-X", "__proto__");
    // The bundle as it arrives in a body: JSON.parse makes "__proto__" an own key.
    const named = JSON.parse(JSON.stringify(await buildBundle(corpus, [run])).replaceAll("RUN-X", "__proto__")) as Bundle;
    const report = await replayBundle(await resealBundle(named), { limits: EC_LIMITS });
    expect(report.decision).toBe("match");
    expect(Object.keys(report.input_digests.rows).sort()).toEqual(["__proto__", "corpus"]);
    expect(JSON.parse(JSON.stringify(report)).input_digests.rows.__proto__).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
