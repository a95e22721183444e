/**
 * Derives the audit's runs from scenario.ts: each run's event trace and one receipt per claim,
 * deterministically (no clock, no randomness), and the replay bundle.
 */
import { buildBundle, type Bundle } from "../../worker/protocol/ec/bundle.js";
import { referenceTo } from "../../worker/protocol/ec/evidence.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { issueEcReceipt, type EcReceipt } from "../../worker/protocol/ec/receipt.js";
import { corpus, POLICY_ID, runs, type ClaimSpec, type RunSpec } from "./scenario.js";

export interface BuiltReceipt {
  id: string;
  run_id: string;
  spec: ClaimSpec;
  receipt: EcReceipt;
}

export interface BuiltRun {
  run_id: string;
  events: TraceEvent[];
  receipts: BuiltReceipt[];
}

const event = (fields: Partial<TraceEvent> & Pick<TraceEvent, "action_type">): Omit<TraceEvent, "action_id"> => ({
  tool: null, input: null, output: null, doc_id: null, claim_id: null, attempt: null, ...fields,
});

export function traceOf(run: RunSpec): { events: TraceEvent[]; anchors: Map<string, number> } {
  const steps: Omit<TraceEvent, "action_id">[] = [];
  const anchors = new Map<string, number>();
  for (const c of run.claims) {
    const query = `evidence for ${c.claim_id}: ${c.claim}`;
    const noise = run.noise?.[c.claim_id];
    if (noise === "tool_error+retry") {
      steps.push(event({ action_type: "tool_error", tool: "search", input: query, output: "search backend timed out after 2000 ms", attempt: 1 }));
      steps.push(event({ action_type: "retry", tool: "search", input: query, attempt: 2 }));
    }
    if (noise === "empty_observation") steps.push(event({ action_type: "empty_observation", tool: "search", input: `${query} (narrow)`, output: "" }));
    if (noise === "access_denied") steps.push(event({ action_type: "access_denied", tool: "fetch", input: "staff-minutes", doc_id: "staff-minutes", output: "403 not authorised" }));
    for (const doc of new Set(c.spans.map(([d]) => d))) steps.push(event({ action_type: "retrieval", tool: "search", input: query, doc_id: doc, output: `retrieved ${doc}` }));
    anchors.set(c.claim_id, steps.length);
    steps.push(event({ action_type: "claim_emission", claim_id: c.claim_id, output: c.claim }));
  }
  steps.push(event({ action_type: "answer", output: run.claims.map((c) => c.claim).join(" ") }));
  steps.push(event({ action_type: "stop", output: "done" }));
  return { events: steps.map((s, i) => ({ action_id: `${run.run_id}/e${String(i).padStart(2, "0")}`, ...s })), anchors };
}

export async function buildRuns(): Promise<BuiltRun[]> {
  const built: BuiltRun[] = [];
  for (const run of runs) {
    const { events, anchors } = traceOf(run);
    const receipts: BuiltReceipt[] = [];
    for (const c of run.claims) {
      const evidence = await Promise.all(c.spans.map(([doc, quote], i) => referenceTo(corpus, doc, `${run.run_id}/${c.claim_id}/s${i}`, quote)));
      const receipt = await issueEcReceipt({ policy_id: POLICY_ID, run_id: run.run_id, claim_id: c.claim_id, claim: c.claim, emission_anchor: anchors.get(c.claim_id)!, evidence, corpus, events });
      if (!receipt.integrity.valid) throw new Error(`scenario receipt ${run.run_id}/${c.claim_id} does not verify: ${receipt.integrity.reasons}`);
      receipts.push({ id: `${run.run_id}/${c.claim_id}`, run_id: run.run_id, spec: c, receipt });
    }
    built.push({ run_id: run.run_id, events, receipts });
  }
  return built;
}

export async function scenarioBundle(built: BuiltRun[]): Promise<Bundle> {
  return buildBundle(
    corpus,
    built.map((r) => ({ run_id: r.run_id, events: r.events, receipts: r.receipts.map(({ id, receipt }) => ({ id, receipt })), required_claims: r.receipts.map((x) => x.spec.claim_id) })),
  );
}
