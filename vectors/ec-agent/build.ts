/**
 * Derives the audit's runs from scenario.ts: each run's event trace, one receipt per claim and
 * its budget ledger, deterministically (no clock, no randomness), and the replay bundle.
 */
import { buildBundle, type BudgetLedger, type Bundle } from "../../worker/protocol/ec/bundle.js";
import { versionOf } from "../../worker/protocol/ec/corpus.js";
import { referenceTo } from "../../worker/protocol/ec/evidence.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { issueEcReceipt, type EcReceipt } from "../../worker/protocol/ec/receipt.js";
import { corpus, FINAL_ONLY_POLICY_ID, POLICY_ID, runs, type ClaimSpec, type RunSpec } from "./scenario.js";

export interface BuiltReceipt {
  id: string;
  run_id: string;
  spec: ClaimSpec;
  receipt: EcReceipt;
}

export interface BuiltRun {
  run_id: string;
  spec: RunSpec;
  policy: string;
  events: TraceEvent[];
  receipts: BuiltReceipt[];
  budget_ledger: BudgetLedger;
}

type Step = Omit<TraceEvent, "action_id">;
const event = (fields: Partial<Step> & Pick<TraceEvent, "action_type">): Step => ({
  tool: null, input: null, output: null, doc_id: null, doc_version: null, access: null, claim_id: null, attempt: null, ...fields,
});

const TOOL_TYPES = new Set(["retrieval", "tool_error", "retry", "empty_observation", "access_denied", "tool_call"]);

/** A retrieval records the version it saw (the content hash) and the access decision it got. */
async function retrieval(query: string, doc: string): Promise<Step> {
  return event({ action_type: "retrieval", tool: "search", input: query, doc_id: doc, doc_version: await versionOf(corpus[doc].text), access: corpus[doc].access ?? "granted", output: `retrieved ${doc}` });
}

export async function traceOf(run: RunSpec): Promise<{ events: TraceEvent[]; anchors: Map<string, number> }> {
  const steps: Step[] = [];
  const anchors = new Map<string, number>();
  for (const c of run.claims) {
    const query = `evidence for ${c.claim_id}: ${c.claim}`;
    const noise = run.noise?.[c.claim_id];
    if (noise === "tool_error+retry") {
      steps.push(event({ action_type: "tool_error", tool: "search", input: query, output: "search backend timed out after 2000 ms", attempt: 1 }));
      steps.push(event({ action_type: "retry", tool: "search", input: query, attempt: 2 }));
    }
    if (noise === "empty_observation") steps.push(event({ action_type: "empty_observation", tool: "search", input: `${query} (narrow)`, output: "" }));
    if (noise === "access_denied") steps.push(event({ action_type: "access_denied", tool: "fetch", input: "staff-minutes", doc_id: "staff-minutes", access: "unauthorized", output: "403 not authorised" }));
    for (const doc of new Set(c.spans.map(([d]) => d))) steps.push(await retrieval(query, doc));
    if (run.mode === "action-level") {
      anchors.set(c.claim_id, steps.length);
      steps.push(event({ action_type: "claim_emission", claim_id: c.claim_id, output: c.claim }));
    }
  }
  for (const doc of run.exhausted?.retrieved ?? []) steps.push(await retrieval("who left for the harbour", doc));
  // A run without an answer still commits one: an explicit empty output.
  const answer = run.exhausted ? "" : run.mode === "final-only" ? `${run.claims[0].claim}.` : run.claims.map((c) => c.claim).join(" ");
  if (run.mode === "final-only") anchors.set(run.claims[0].claim_id, steps.length);
  steps.push(event({ action_type: "answer", output: answer }));
  steps.push(event({ action_type: "stop", output: run.exhausted ? "budget exhausted" : "done" }));
  return { events: steps.map((s, i) => ({ action_id: `${run.run_id}/e${String(i).padStart(2, "0")}`, ...s })), anchors };
}

function ledgerOf(run: RunSpec, events: TraceEvent[]): BudgetLedger {
  const calls = events.filter((e) => TOOL_TYPES.has(e.action_type)).length;
  const answer = events.find((e) => e.action_type === "answer")?.output ?? "";
  return {
    max_calls: run.exhausted ? calls : 12,
    calls,
    max_declared_tokens: 256,
    declared_tokens: answer.split(/\s+/).filter(Boolean).length,
    verifier_calls: run.claims.length,
    termination: run.exhausted ? "budget_exhausted" : "answered",
  };
}

export async function buildRuns(): Promise<BuiltRun[]> {
  const built: BuiltRun[] = [];
  for (const run of runs) {
    const { events, anchors } = await traceOf(run);
    const policy = run.mode === "final-only" ? FINAL_ONLY_POLICY_ID : POLICY_ID;
    const receipts: BuiltReceipt[] = [];
    for (const c of run.claims) {
      const evidence = await Promise.all(c.spans.map(([doc, span]) => referenceTo(corpus, doc, span)));
      const receipt = await issueEcReceipt({ policy_id: policy, run_id: run.run_id, claim_id: c.claim_id, claim: c.claim, emission_anchor: anchors.get(c.claim_id)!, evidence, corpus, events });
      if (!receipt.integrity.valid) throw new Error(`scenario receipt ${run.run_id}/${c.claim_id} does not verify: ${receipt.integrity.reasons}`);
      receipts.push({ id: `${run.run_id}/${c.claim_id}`, run_id: run.run_id, spec: c, receipt });
    }
    built.push({ run_id: run.run_id, spec: run, policy, events, receipts, budget_ledger: ledgerOf(run, events) });
  }
  return built;
}

export async function scenarioBundle(built: BuiltRun[]): Promise<Bundle> {
  return buildBundle(
    corpus,
    built.map((r) => ({
      run_id: r.run_id,
      record_id: r.spec.record_id,
      policy: r.policy,
      seed: r.spec.seed,
      required_claims: r.spec.exhausted?.required_claims ?? r.receipts.map((x) => x.spec.claim_id),
      events: r.events,
      receipts: r.receipts.map((x) => x.receipt),
      budget_ledger: r.budget_ledger,
    })),
  );
}
