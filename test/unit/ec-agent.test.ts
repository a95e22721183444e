import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../scripts/local-server.js";
import { sha256Hex } from "../../worker/protocol/digest.js";
import { asciiCanonical, compareCodePoints } from "../../worker/protocol/ec/canonical.js";
import { buildBundle, renderReport, replayBundle, resealBundle, type Bundle, type ExecutionRow } from "../../worker/protocol/ec/bundle.js";
import { corpusDigest, corpusProblem, versionOf, type Corpus } from "../../worker/protocol/ec/corpus.js";
import { requiredClaimCoverage } from "../../worker/protocol/ec/coverage.js";
import { checkEvidence, codePointIndex, declareSpan, referenceTo, type EvidenceRef } from "../../worker/protocol/ec/evidence.js";
import { traceDigest, traceProblems, type TraceEvent } from "../../worker/protocol/ec/events.js";
import { issueEcReceipt, verifyEcReceipt, type EcReceipt } from "../../worker/protocol/ec/receipt.js";
import { DEFAULT_PAIRS, DEFAULT_SUPPORT_CONFIG, evaluateSupport, GUARD_MANIFEST, guardSupport, lexicalSupport, supportConfigDigest, temporalAtoms } from "../../worker/protocol/ec/support.js";
import { casefold, tokens } from "../../worker/protocol/ec/text.js";
import { runAudit } from "../../vectors/ec-agent/audit.js";
import { buildRuns, scenarioBundle, type BuiltReceipt, type BuiltRun } from "../../vectors/ec-agent/build.js";
import { ecFixtures, PAPER_VALUES, TWO_EVENTS } from "../../vectors/ec-agent/generate.js";
import { corpus } from "../../vectors/ec-agent/scenario.js";

/** Runs a Python snippet that reads JSON on stdin and prints JSON: the reference implementation. */
function python(code: string, input: unknown): any {
  const out = execFileSync("python3", ["-c", code], { input: JSON.stringify(input), encoding: "utf8" });
  return JSON.parse(out);
}

let runs: BuiltRun[];
let sampleX: BuiltReceipt;
let sample: EcReceipt;
let sampleEvents: TraceEvent[];
beforeAll(async () => {
  runs = await buildRuns();
  sampleX = runs[2].receipts[2]; // cites a span after a combining mark and before an emoji
  sample = sampleX.receipt;
  sampleEvents = runs[2].events;
});

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));
const integrity = async (r: unknown, c: Corpus = corpus, e: unknown = sampleEvents) => (await verifyEcReceipt(r, c, e)).reasons.filter((x) => !x.startsWith("SUPPORT_"));
/** Issues the sample's receipt again with some fields changed, so only the changed property can fail. */
const reissue = (over: Partial<Pick<EcReceipt, "claim" | "emission_anchor" | "evidence">>, c: Corpus = corpus, events: TraceEvent[] = sampleEvents) =>
  issueEcReceipt({ policy_id: sample.policy_id, run_id: sample.run_id, claim_id: sample.claim_id, claim: over.claim ?? sample.claim, emission_anchor: over.emission_anchor ?? sample.emission_anchor, evidence: over.evidence ?? sample.evidence, corpus: c, events });

const ev = (fields: Partial<TraceEvent> & Pick<TraceEvent, "action_id" | "action_type">): TraceEvent => ({ tool: null, input: null, output: null, doc_id: null, doc_version: null, access: null, claim_id: null, attempt: null, ...fields });

/** A one-document world: a retrieval, a claim, the answer. */
async function tinyWorld(spans: Record<string, { start: number; end: number }>, claim = "Alpha beta gamma") {
  const text = "Alpha beta gamma. Delta epsilon.";
  const c: Corpus = { d: { text, spans } };
  const events = [
    ev({ action_id: "t0", action_type: "retrieval", tool: "search", input: "q", doc_id: "d", doc_version: await versionOf(text), access: "granted", output: "retrieved d" }),
    ev({ action_id: "t1", action_type: "claim_emission", claim_id: "c1", output: claim }),
    ev({ action_id: "t2", action_type: "answer", output: claim }),
  ];
  const issue = async (evidence: EvidenceRef[], anchor = 1) => issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim, emission_anchor: anchor, evidence, corpus: c, events });
  return { corpus: c, events, issue };
}

describe("evidence spans count Unicode code points", () => {
  it("offsets skip an astral character once and a combining mark as its own code point", async () => {
    const text = "⚓ Zoe\u0308 saw 📓 the red stair.";
    const doc = { text, spans: { s: declareSpan(text, "the red stair") } };
    const ref = await referenceTo({ d: doc }, "d", "s");
    expect([ref.start, ref.end]).toEqual([13, 26]);
    expect(text.indexOf("the red stair")).toBe(14);
    const check = await checkEvidence(ref, 0, { d: doc }, codePointIndex({ d: doc }));
    expect(check).toEqual({ findings: [], verified: "the red stair" });
  });

  const refCases: [string, (r: EvidenceRef) => unknown, string][] = [
    ["a changed quote", (r) => ({ ...r, quote: r.quote!.replace("blue", "navy") }), "QUOTE_MISMATCH"],
    ["an off-by-one offset", (r) => ({ ...r, end: r.end - 1 }), "SPAN_HASH_MISMATCH"],
    ["a wrong doc id", (r) => ({ ...r, doc_id: "no-such-doc" }), "SOURCE_UNKNOWN"],
    ["a negative offset", (r) => ({ ...r, start: -1 }), "OFFSET_NEGATIVE"],
    ["reversed offsets", (r) => ({ ...r, start: r.end, end: r.start }), "OFFSET_REVERSED"],
    ["a non-integer offset", (r) => ({ ...r, start: r.start + 0.5 }), "OFFSET_NOT_INTEGER"],
    ["an out-of-range offset", (r) => ({ ...r, end: 10_000 }), "OFFSET_OUT_OF_RANGE"],
    ["a quote written null (not emitted is left out)", (r) => ({ ...r, quote: null }), "SCHEMA_INVALID"],
  ];
  it.each(refCases)("%s fails with its own reason code", async (_name, mutate, code) => {
    const ref = mutate(sample.evidence[0]);
    const check = await checkEvidence(ref, 0, corpus, codePointIndex(corpus));
    expect(check.findings.map((f) => f.reason)).toContain(code);
    const reasons = await integrity({ ...sample, evidence: [ref] });
    expect(reasons).toContain(code);
    expect(reasons).toContain("JOINT_DIGEST_MISMATCH");
  });

  it("an off-by-one offset is told apart from a changed quote", async () => {
    const quote = await checkEvidence({ ...sample.evidence[0], quote: "x" + sample.evidence[0].quote!.slice(1) }, 0, corpus, codePointIndex(corpus));
    expect(quote.findings.map((f) => f.reason)).toEqual(["QUOTE_MISMATCH"]);
  });

  it("an absent evidence set is never a valid receipt", async () => {
    const r = await verifyEcReceipt({ ...sample, evidence: [] }, corpus, sampleEvents);
    expect(r.valid).toBe(false);
    expect(r.reasons).toContain("EVIDENCE_EMPTY");
  });

  it("a valid receipt says OK, then its lexical support", async () => {
    expect((await verifyEcReceipt(sample, corpus, sampleEvents)).reasons).toEqual(["OK", "SUPPORT_LEXICAL_OVERLAP"]);
  });
});

describe("spans are part of the corpus", () => {
  it("a receipt citing a made-up span id is an invalid reference, even when everything else was honestly issued", async () => {
    const invented = await reissue({ evidence: [{ ...sample.evidence[0], span_id: "s9" }] });
    expect(invented.integrity).toEqual({ valid: false, reasons: ["INVALID_REFERENCE"] });
    expect(await integrity(invented)).toEqual(["INVALID_REFERENCE"]);
  });

  it("a declared span cited at other offsets is an invalid reference", async () => {
    const { start, end } = sample.evidence[0];
    const quote = Array.from(corpus.expedition.text).slice(start, end - 2).join("");
    const shorter = { ...sample.evidence[0], end: end - 2, quote, text_sha256: await sha256Hex(quote) };
    expect(await integrity(await reissue({ evidence: [shorter] }))).toEqual(["INVALID_REFERENCE"]);
  });

  it("a missing document or span identifier is an invalid reference, not a schema error", async () => {
    for (const key of ["doc_id", "span_id"] as const) {
      for (const value of [undefined, ""]) {
        const ref: Record<string, unknown> = { ...sample.evidence[0] };
        if (value === undefined) delete ref[key];
        else ref[key] = value;
        const check = await checkEvidence(ref, 0, corpus, codePointIndex(corpus));
        expect(check.findings.map((f) => f.reason), `${key}=${value}`).toEqual(["INVALID_REFERENCE"]);
      }
    }
  });

  it("a corpus's declared spans must lie inside their document, and they enter the corpus digest", async () => {
    expect(await corpusProblem({ d: { text: "abc", spans: { s: { start: 1, end: 4 } } } })).toMatch(/0 <= start <= end <= 3/);
    expect(await corpusProblem({ d: { text: "abc", spans: { s: { start: 0, end: 3, quote: "abc" } } } })).toMatch(/must be \{start, end\}/);
    const moved = clone(corpus);
    moved.expedition.spans!.s2.end -= 1;
    expect(await corpusDigest(moved)).not.toBe(await corpusDigest(corpus));
  });
});

describe("the paper's order of checks", () => {
  it("a quote mismatch fails before support: support is reported as not evaluated, never computed on the unverified quote", async () => {
    const forged = clone(sample);
    forged.evidence[0].quote = sample.claim; // the forged quote would support the claim as a substring
    const v = await verifyEcReceipt(forged, corpus, sampleEvents);
    expect(v.reasons).toEqual(["QUOTE_MISMATCH", "JOINT_DIGEST_MISMATCH", "SUPPORT_NOT_EVALUATED"]);
    expect(v.support).toEqual({ evaluated: false, lexical: [], supported: null });
  });

  it("a hash mismatch likewise leaves support unevaluated", async () => {
    const v = await verifyEcReceipt({ ...sample, evidence: [{ ...sample.evidence[0], text_sha256: "0".repeat(64) }] }, corpus, sampleEvents);
    expect(v.reasons).toContain("SPAN_HASH_MISMATCH");
    expect(v.reasons.at(-1)).toBe("SUPPORT_NOT_EVALUATED");
  });

  it("an empty span passes structural verification and fails the support check", async () => {
    const world = await tinyWorld({ empty: { start: 5, end: 5 } });
    const receipt = await world.issue([await referenceTo(world.corpus, "d", "empty")]);
    const v = await verifyEcReceipt(receipt, world.corpus, world.events);
    expect(v.valid).toBe(true);
    expect(v.reasons).toEqual(["OK", "SUPPORT_EMPTY"]);
    expect(v.support).toMatchObject({ evaluated: true, supported: false });
  });

  it("a reference stops at steps 1–3 only; steps 4–6 and the observation check all report, as the docs say", async () => {
    const stale = await versionOf(`${corpus.expedition.text} (v0)`);
    const ref = { ...sample.evidence[0], span_id: "s9", doc_version: stale, quote: "forged" };
    const v = await verifyEcReceipt({ ...sample, evidence: [ref] }, corpus, sampleEvents);
    expect(v.findings.filter((f) => f.evidence === 0).map((f) => f.reason)).toEqual(["INVALID_REFERENCE", "SOURCE_VERSION_MISMATCH", "QUOTE_MISMATCH", "OBSERVATION_MISMATCH"]);
    // A stop at steps 1–3 reports that one code and nothing about the reference after it.
    const out = await verifyEcReceipt({ ...sample, evidence: [{ ...ref, end: 10_000 }] }, corpus, sampleEvents);
    expect(out.findings.filter((f) => f.evidence === 0).map((f) => f.reason)).toEqual(["OFFSET_OUT_OF_RANGE"]);
    const docs = readFileSync(resolve(PROJECT_ROOT, "docs/ec-receipts.md"), "utf8").replace(/\s+/g, " ");
    expect(docs).toContain("A reference stops at the first failure of steps 1–3");
    expect(docs).toContain("steps 4–6 (and the observation check below) all run and all report");
  });

  it("the quote is optional: a reference without one verifies on its hash; with one, the quote is checked", async () => {
    const world = await tinyWorld({ s: { start: 0, end: 16 } });
    const bare = await referenceTo(world.corpus, "d", "s", { quote: false });
    expect(bare).not.toHaveProperty("quote");
    const v = await verifyEcReceipt(await world.issue([bare]), world.corpus, world.events);
    expect(v.reasons).toEqual(["OK", "SUPPORT_LEXICAL_SUBSTRING"]);
    const wrong = await world.issue([{ ...bare, quote: "Alpha beta gamme" }]);
    expect(wrong.integrity.reasons).toEqual(["QUOTE_MISMATCH"]);
  });
});

describe("claim anchors", () => {
  it("a paper-style receipt anchored on the answer event verifies", async () => {
    const finalOnly = runs.find((r) => r.spec.mode === "final-only")!;
    const x = finalOnly.receipts[0];
    expect(finalOnly.events[x.receipt.emission_anchor].action_type).toBe("answer");
    expect((await verifyEcReceipt(x.receipt, corpus, finalOnly.events)).reasons).toEqual(["OK", "SUPPORT_LEXICAL_SUBSTRING"]);
  });

  it("an answer anchor holds only for a claim taken from that answer, and no anchor lies after the answer", async () => {
    const world = await tinyWorld({ s: { start: 0, end: 16 } }, "Alpha beta gamma");
    const ref = await referenceTo(world.corpus, "d", "s");
    expect((await world.issue([ref], 2)).integrity).toEqual({ valid: true, reasons: ["OK"] });
    const other = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim: "Delta epsilon", emission_anchor: 2, evidence: [ref], corpus: world.corpus, events: world.events });
    expect(other.integrity.reasons).toEqual(["ANCHOR_MISMATCH"]);
    const after = [...world.events, ev({ action_id: "t3", action_type: "claim_emission", claim_id: "c1", output: "Alpha beta gamma" })];
    const late = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim: "Alpha beta gamma", emission_anchor: 3, evidence: [ref], corpus: world.corpus, events: after });
    expect(late.integrity.reasons).toEqual(["ANCHOR_MISMATCH"]);
    const retrieval = await world.issue([ref], 0);
    expect(retrieval.integrity.reasons).toEqual(["ANCHOR_MISMATCH"]);
  });

  it("on the answer, a claim id the run emitted before it stands for a text one of its emissions gave (review rv-93)", async () => {
    const world = await tinyWorld({ s: { start: 0, end: 16 } }, "Alpha beta gamma");
    const ref = await referenceTo(world.corpus, "d", "s");
    // c1 emitted twice before the answer, as two texts; the answer holds both.
    const events = [
      world.events[0],
      ev({ action_id: "t1", action_type: "claim_emission", claim_id: "c1", output: "Alpha beta" }),
      ev({ action_id: "t2", action_type: "claim_emission", claim_id: "c1", output: "beta gamma" }),
      ev({ action_id: "t3", action_type: "answer", output: "Alpha beta gamma" }),
    ];
    const issue = (claim_id: string, claim: string) => issueEcReceipt({ policy_id: "p", run_id: "r", claim_id, claim, emission_anchor: 3, evidence: [ref], corpus: world.corpus, events });
    expect((await issue("c1", "beta gamma")).integrity).toEqual({ valid: true, reasons: ["OK"] });
    expect((await issue("c1", "Alpha beta")).integrity).toEqual({ valid: true, reasons: ["OK"] });
    expect((await issue("c1", "Alpha beta gamma")).integrity.reasons).toEqual(["ANCHOR_MISMATCH"]);
    // An id the run never emitted at its own event is taken from the answer alone.
    expect((await issue("c9", "Alpha beta gamma")).integrity).toEqual({ valid: true, reasons: ["OK"] });
    // An emission after the answer is outside the committed prefix and names nothing here.
    const later = [...events, ev({ action_id: "t4", action_type: "claim_emission", claim_id: "c9", output: "other" })];
    const late = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c9", claim: "Alpha beta gamma", emission_anchor: 3, evidence: [ref], corpus: world.corpus, events: later });
    expect(late.integrity).toEqual({ valid: true, reasons: ["OK"] });
  });
});

describe("dynamic documents: version hash and access decision", () => {
  it("versions are content hashes, never free strings", async () => {
    expect(await corpusProblem({ d: { text: "abc", version: "v3" } })).toMatch(/content hash/);
    expect(await corpusProblem({ d: { text: "abc", version: await versionOf("abc") } })).toBeNull();
    expect(await checkEvidence({ ...sample.evidence[0], doc_version: "v1" }, 0, corpus, codePointIndex(corpus))).toMatchObject({ findings: [{ reason: "SCHEMA_INVALID" }] });
  });

  it("the observation records the version and the access decision, and both enter the commitment", async () => {
    const observed = sampleEvents.findLast((e) => e.action_type === "retrieval" && e.doc_id === "expedition" && sampleEvents.indexOf(e) < sample.emission_anchor)!;
    expect(observed).toMatchObject({ doc_version: await versionOf(corpus.expedition.text), access: "granted" });
    expect(sample.evidence[0]).toMatchObject({ doc_version: observed.doc_version, access: "granted" });
    expect(await integrity({ ...sample, evidence: [{ ...sample.evidence[0], access: "revoked" }] })).toContain("JOINT_DIGEST_MISMATCH");
    const events = clone(sampleEvents);
    events[sampleEvents.indexOf(observed)].access = "unauthorized";
    expect(await integrity(sample, corpus, events)).toEqual(["EXECUTION_DIGEST_MISMATCH", "OBSERVATION_MISMATCH", "JOINT_DIGEST_MISMATCH"]);
  });

  it("an access denial is an observation: a reference granted before it and cited after it is OBSERVATION_MISMATCH", async () => {
    const world = await tinyWorld({ s: { start: 0, end: 16 } });
    const ref = await referenceTo(world.corpus, "d", "s");
    const denied = ev({ action_id: "t0b", action_type: "access_denied", tool: "fetch", input: "d", doc_id: "d", doc_version: ref.doc_version, access: "revoked", output: "403" });
    const events = [world.events[0], denied, ...world.events.slice(1)];
    const after = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim: "Alpha beta gamma", emission_anchor: 2, evidence: [ref], corpus: world.corpus, events });
    expect(after.integrity).toEqual({ valid: false, reasons: ["OBSERVATION_MISMATCH"] });
    const v = await verifyEcReceipt(after, world.corpus, events);
    expect(v.findings).toContainEqual(expect.objectContaining({ reason: "OBSERVATION_MISMATCH", evidence: 0, detail: expect.stringMatching(/event 1 \(access_denied\).*access revoked/) }));
    // A retrieval after the denial that grants access again is the last observation: the reference agrees with it.
    const regranted = [...events.slice(0, 2), { ...world.events[0], action_id: "t0c" }, ...events.slice(2)];
    const later = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim: "Alpha beta gamma", emission_anchor: 3, evidence: [ref], corpus: world.corpus, events: regranted });
    expect(later.integrity).toEqual({ valid: true, reasons: ["OK"] });
    // A denial that records a grant contradicts itself: it is not of its form, so a reference
    // recording "granted" cannot pass the observation check right after the run was denied.
    const selfGranted = [world.events[0], { ...denied, access: "granted" as const }, ...world.events.slice(1)];
    const forged = await issueEcReceipt({ policy_id: "p", run_id: "r", claim_id: "c1", claim: "Alpha beta gamma", emission_anchor: 2, evidence: [ref], corpus: world.corpus, events: selfGranted });
    expect(forged.integrity).toEqual({ valid: false, reasons: ["EVENT_SCHEMA_INVALID"] });
    expect((await verifyEcReceipt(forged, world.corpus, selfGranted)).findings).toContainEqual(expect.objectContaining({ reason: "EVENT_SCHEMA_INVALID", event: 1, detail: expect.stringMatching(/never granted/) }));
  });

  it("replay under a substituted version fails with SOURCE_VERSION_MISMATCH", async () => {
    const c = clone(corpus);
    c.expedition.text = c.expedition.text.replace("storm", "gale");
    expect(await integrity(sample, c)).toEqual(["CORPUS_DIGEST_MISMATCH", "SOURCE_VERSION_MISMATCH"]);
  });

  it("replay under a changed access state fails with ACCESS_STATE_MISMATCH", async () => {
    for (const access of ["revoked", "unauthorized"] as const) {
      const c = clone(corpus);
      c.expedition.access = access;
      expect(await integrity(sample, c)).toEqual(["ACCESS_STATE_MISMATCH"]);
    }
  });

  // A source the run was not granted (revoked) or was refused (unauthorized): the receipt records
  // that access, and both issue-time and verify-time integrity reject it with the access's code.
  for (const [access, code] of [["revoked", "SOURCE_REVOKED"], ["unauthorized", "SOURCE_UNAUTHORIZED"]] as const) {
    it(`a receipt that cites a source whose access is ${access} is ${code}`, async () => {
      const c = clone(corpus);
      c.expedition.access = access;
      const events = clone(sampleEvents).map((e) => (e.doc_id === "expedition" && e.action_type === "retrieval" ? { ...e, access } : e));
      const r = await reissue({ evidence: [{ ...sample.evidence[0], access }] }, c, events);
      expect(r.integrity.reasons).toEqual([code]);
      expect(await integrity(r, c, events)).toEqual([code]);
    });
  }
});

describe("events: closed schema and canonical trace", () => {
  const base = () => clone(sampleEvents) as unknown as Record<string, unknown>[];
  it.each([
    ["a duplicated action id", (e: Record<string, unknown>[]) => (e[1].action_id = e[0].action_id), "EVENT_DUPLICATE_ACTION_ID"],
    ["an undeclared field", (e: Record<string, unknown>[]) => (e[0].confidence = 1), "EVENT_SCHEMA_INVALID"],
    ["a missing field", (e: Record<string, unknown>[]) => delete e[0].tool, "EVENT_SCHEMA_INVALID"],
    ["an invalid action type", (e: Record<string, unknown>[]) => (e[0].action_type = "think"), "EVENT_ACTION_TYPE_INVALID"],
    ["a non-integer attempt", (e: Record<string, unknown>[]) => (e[0].attempt = 1.5), "EVENT_SCHEMA_INVALID"],
    ["a boolean where a string is declared", (e: Record<string, unknown>[]) => (e[0].tool = true), "EVENT_SCHEMA_INVALID"],
    ["an integer where a string is declared", (e: Record<string, unknown>[]) => (e[0].output = 7), "EVENT_SCHEMA_INVALID"],
    ["a string where an integer is declared", (e: Record<string, unknown>[]) => (e[0].attempt = "1"), "EVENT_SCHEMA_INVALID"],
    ["a free-form version", (e: Record<string, unknown>[]) => (e[0].doc_version = "v1"), "EVENT_SCHEMA_INVALID"],
    ["an empty action id", (e: Record<string, unknown>[]) => (e[0].action_id = ""), "EVENT_SCHEMA_INVALID"],
    ["an index carried as a field", (e: Record<string, unknown>[]) => (e[0].index = 0), "EVENT_SCHEMA_INVALID"],
  ])("%s fails canonical trace verification", async (_name, mutate, code) => {
    const events = base();
    mutate(events);
    expect(traceProblems(events).map((p) => p.reason)).toContain(code);
    expect(await integrity(sample, corpus, events)).toContain(code);
  });

  it("only schema-declared fields enter the canonical trace", async () => {
    const withExtra = clone(sampleEvents).map((e) => ({ ...e, gold_supported: true })) as unknown as TraceEvent[];
    expect(await traceDigest(withExtra)).toBe(await traceDigest(sampleEvents));
  });

  it("a trace without an answer has no execution digest", async () => {
    const events = base().filter((e) => e.action_type !== "answer");
    expect(await integrity(sample, corpus, events)).toContain("EVENT_NO_ANSWER");
  });

  it("our two-event trace vector canonicalises and digests as Python does under our separator and schema version (a self-check, not the paper's vector)", async () => {
    const vector = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/trace-vector.json"), "utf8"));
    const py = python(
      `import json, sys, hashlib
v = json.load(sys.stdin)
doc = {"domain": v["domain"], "events": [dict(e, index=i) for i, e in enumerate(v["events"])], "schema_version": v["schema_version"]}
canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
print(json.dumps({"canonical": canon, "digest": "sha256:" + hashlib.sha256((v["domain"] + "\\n" + canon).encode()).hexdigest()}))`,
      vector,
    );
    expect(vector.canonical).toBe(py.canonical);
    expect(vector.digest).toBe(py.digest);
    expect(vector.events).toEqual(TWO_EVENTS);
    expect(vector.domain).toBe("countersign.ec-agent.trace.v1");
    expect(vector.schema_version).toBe("ec-agent/2");
    expect(vector.canonical).toContain("\\ud83d\\udcd3");
  });

  it("NOT REPRODUCED: the paper's two-event vector (977cef81…3e8c746) and guard configuration digest (ee54723b…)", async () => {
    // Both depend on the paper's byte-exact separator and fixture, published only in its
    // supplementary material. This test states that they are not reproduced; it fails the day
    // either value matches, so the claim can be upgraded rather than silently kept.
    const vector = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/trace-vector.json"), "utf8"));
    const hex = (vector.digest as string).slice("sha256:".length);
    const ours = await supportConfigDigest(DEFAULT_SUPPORT_CONFIG);
    const status = {
      trace_vector: hex.startsWith(PAPER_VALUES.trace_vector_prefix) && hex.endsWith(PAPER_VALUES.trace_vector_suffix) ? "reproduced" : "NOT reproduced",
      guard_config_digest: ours === `sha256:${PAPER_VALUES.guard_config_digest}` ? "reproduced" : "NOT reproduced",
    };
    console.warn(`paper values: trace vector ${PAPER_VALUES.trace_vector_prefix}…${PAPER_VALUES.trace_vector_suffix} ${status.trace_vector} (ours ${hex.slice(0, 8)}…${hex.slice(-7)}); guard config ${PAPER_VALUES.guard_config_digest.slice(0, 10)}… ${status.guard_config_digest} (ours ${ours.slice(7, 17)}…)`);
    expect(status).toEqual({ trace_vector: "NOT reproduced", guard_config_digest: "NOT reproduced" });
    expect(vector.paper).toMatchObject({ reproduced: false, trace_vector_prefix: "977cef81", trace_vector_suffix: "3e8c746" });
    const docs = readFileSync(resolve(PROJECT_ROOT, "docs/ec-receipts.md"), "utf8");
    expect(docs).toMatch(/not reproduced/i);
    expect(docs).not.toMatch(/published (two-event )?vector/i);
  });
});

describe("canonical form as Python's", () => {
  it("sorts keys by code point, not by UTF-16 unit", () => {
    const value = { "\uff61": 1, "\u{1F600}": 2, a: 3, "\u00e9": 4 };
    expect(Object.keys(value).sort()).toEqual(["a", "é", "😀", "｡"]); // what a plain sort gives
    expect(asciiCanonical(value)).toBe(python(`import json,sys; print(json.dumps(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",", ":"), ensure_ascii=True)))`, value));
    expect(compareCodePoints("\uff61", "\u{1F600}")).toBeLessThan(0);
  });

  it("writes finite floats as Python's repr, integers as integers, and refuses only non-finite numbers", () => {
    const floats = [0.5, -1.25, 0.1, 1e-5, 1.5e-7, 123.456, 1.7976931348623157e308, 5e-324, 2.5e15 + 0.5, 0.0001, 0.00012345, -0.000033, 3.14159e21, 1234567.891];
    const doc = { floats, ints: [0, -7, 9007199254740991] };
    expect(asciiCanonical(doc)).toBe(python(`import json,sys; print(json.dumps(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)))`, doc));
    for (const bad of [NaN, Infinity, -Infinity]) expect(() => asciiCanonical({ x: bad })).toThrow(/non-finite/);
  });

  it("escapes as Python does", () => {
    const weird = { k: "tab\t nul\u0000 del\u007f é 😀 \"q\" \\ /" };
    expect(asciiCanonical(weird)).toBe(python(`import json,sys; print(json.dumps(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",", ":"), ensure_ascii=True)))`, weird));
  });
});

describe("support plane", () => {
  it("folds case as Python's str.casefold, not as toLowerCase", () => {
    const samples = ["Straße", "ẞIG", "ΣΊΣΥΦΟΣ ς", "ﬁne ﬂow", "İstanbul", "ǅ", "Ꭰꭰ", "MÜNCHEN"];
    expect(samples.map(casefold)).toEqual(python(`import json,sys; print(json.dumps([s.casefold() for s in json.load(sys.stdin)]))`, samples));
    expect(casefold("Straße")).toBe("strasse");
  });

  it("tokenises as Python's \\w on the folded text, keeping tokens of two or more code points", () => {
    const samples = ["Zoe\u0308 Lindqvist's 3,000-m climb_2 a I", "Straße 5 ½ ⅷ naïve café", "x y zz"];
    const py = python(`import json,sys,re; print(json.dumps([sorted(set(t for t in re.findall(r"\\w+", s.casefold()) if len(t) > 1)) for s in json.load(sys.stdin)]))`, samples);
    expect(samples.map((s) => [...tokens(s)].sort())).toEqual(py);
  });

  it("supports by collapsed substring or by half the claim's tokens, and never on empty input", () => {
    expect(lexicalSupport("the  RED\nstair.", "Visitors climb the red stair.")).toMatchObject({ supported: true, reason: "SUPPORT_LEXICAL_SUBSTRING" });
    expect(lexicalSupport("red stair, blue door", "the red stair")).toMatchObject({ supported: true, reason: "SUPPORT_LEXICAL_OVERLAP", overlap: 0.5 });
    expect(lexicalSupport("red stair blue door gate", "the red stair")).toMatchObject({ supported: false, reason: "SUPPORT_LEXICAL_NONE", overlap: 0.4 });
    for (const [claim, span] of [["", "text"], ["text", ""], ["a ! ?", "a ! ?"], ["   ", "   "], ["red stair", "a !"]]) expect(lexicalSupport(claim, span)).toMatchObject({ supported: false, reason: "SUPPORT_EMPTY" });
  });

  it("a polarity conflict is one pair member in the claim and the other anywhere in the cited span", () => {
    const span = "The greenhouse closed for repairs in 1987 and opened again two years later.";
    const r = guardSupport("The greenhouse opened for repairs in 1987.", span);
    expect(r.lexical.supported).toBe(true);
    expect(r).toMatchObject({ passed: false, reasons: ["GUARD_CONFLICT"], conflicts: [["opened", "closed"]] });
  });

  it("the guard says GUARD_PASS when nothing is wrong and GUARD_LEXICAL_FAIL when the claim shares too few words with the span", () => {
    expect(guardSupport("The red stair.", "Visitors climb the red stair.")).toMatchObject({ passed: true, reasons: ["GUARD_PASS"] });
    const weak = guardSupport("red stair wooden lamp tower", "the red stair");
    expect(weak.lexical.supported).toBe(false);
    expect(weak).toMatchObject({ passed: false, reasons: ["GUARD_LEXICAL_FAIL"] });
  });

  it("polarity aliases stand for their pair member", () => {
    expect(guardSupport("The greenhouse shut for repairs in 1987.", "The greenhouse opened for repairs in 1987.").conflicts).toEqual([["opened", "closed"]]);
    expect(guardSupport("The train arrives at the coast.", "The train departs from the coast.").conflicts).toEqual([["arrived", "departed"]]);
    expect(guardSupport("The brakes were dependable.", "The brakes were unreliable.").conflicts).toEqual([["reliable", "unreliable"]]);
  });

  it("a duration's count is the whole number: thousands separators read, never the tail of a decimal or separated number", () => {
    expect(temporalAtoms("Work resumed 2,000 years later.")).toEqual(["relative:+P2000Y"]);
    expect(temporalAtoms("The voyage lasted 1,250 days.")).toEqual(["duration:P1250D"]);
    expect(temporalAtoms("The voyage lasted 1.5 days.")).toEqual([]);
    expect(temporalAtoms("after 12,34 days")).toEqual([]);
    // The same statement with and without the separator is not a missing atom.
    expect(guardSupport("The voyage lasted 1,250 days.", "The voyage lasted 1250 days.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("Work resumed 2,000 years later.", "Work resumed 2000 years later.")).toMatchObject({ passed: true, missing_atoms: [] });
  });

  it("temporal atoms: absolute dates, years, durations and relative expressions with their direction", () => {
    expect(temporalAtoms("It opened on 12 March 1923, a Tuesday.")).toEqual(["date:1923-03", "date:1923-03-12", "month:march", "weekday:tuesday", "year:1923"]);
    expect(temporalAtoms("On 1923-03-12 and March 14, 1923")).toEqual(expect.arrayContaining(["date:1923-03-12", "date:1923-03-14"]));
    expect(temporalAtoms("She chaired it for eleven years.")).toEqual(["duration:P11Y"]);
    expect(temporalAtoms("It opened again two years later; the roof fell 3 days ago; they arrived after four days.")).toEqual(["relative:+P2Y", "relative:+P4D", "relative:-P3D"]);
    expect(temporalAtoms("in the 1990s")).toEqual(["decade:1990s"]);
    const span = "The night train reached the coast on 12 March 1923 and turned back two days later.";
    expect(guardSupport("The night train reached the coast on 13 March 1923.", span).missing_atoms).toEqual(["number:13", "temporal:date:1923-03-13"]);
    expect(guardSupport("The night train turned back two days earlier.", span).missing_atoms).toEqual(["temporal:relative:-P2D"]);
    expect(guardSupport("The night train reached the coast in March 1923.", span)).toMatchObject({ passed: true });
    expect(guardSupport("The night train reached the coast in May 1923.", span).missing_atoms).toEqual(["temporal:date:1923-05", "temporal:month:may"]);
  });

  it("an absolute date written in another form is not a missing number: the span's date supplies its year, month and day (review rv-114)", () => {
    // The numeric extractor reads a date's digits as numbers: "1923-03-12" holds 03, "3 March" 3.
    // The temporal atom already says the dates are the same, and the number atoms made the guard
    // reject the claim anyway (missing number:03 or number:3).
    expect(guardSupport("It opened on 1923-03-12.", "It opened on 12 March 1923.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("It opened on 3 March 1923.", "It opened on 1923-03-03.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("It opened on March 3, 1923.", "It opened on 1923-03-03.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("It opened in 1923-03.", "It opened in March 1923.")).toMatchObject({ passed: true, missing_atoms: [] });
    // Another date, or a number the span's date does not state, is still missing.
    expect(guardSupport("It opened on 1923-03-13.", "It opened on 12 March 1923.").missing_atoms).toEqual(["number:13", "temporal:date:1923-03-13"]);
    expect(guardSupport("It opened on 3 March 1923 with 4 guests.", "It opened on 1923-03-03 with guests.").missing_atoms).toEqual(["number:4"]);
    // A span's date states its month's number only for the claim's own date: a count written beside
    // it is judged as a number ("3 floors" is not stated by "12 March 1923", whose month is 3).
    expect(guardSupport("It opened with 3 floors on 12 March 1923.", "It opened with 12 floors on 12 March 1923.").missing_atoms).toEqual(["number:3"]);
    expect(guardSupport("It opened on 1923-03-12 with 3 floors.", "It opened on 1923-03-12 with 12 floors.").missing_atoms).toEqual(["number:3"]);
    expect(guardSupport("It opened on 3 March 1923 and had 3 floors.", "It opened on 1923-03-03 and had floors.").missing_atoms).toEqual(["number:3"]);
    // A number a date match only ends or starts inside is not the date's: "1923,500" is one number
    // (the date pattern's \b stops at the comma), and "3.12" is no day of the month.
    expect(guardSupport("On 12 March 1923,500 people came.", "On 12 March 1923 people came.").missing_atoms).toEqual(["number:1923500"]);
    expect(guardSupport("It cost 3.12 March 1923.", "It cost 3 on 12 March 1923.").missing_atoms).toEqual(["number:3.12"]);
    expect(guardSupport("It opened in March 1923.5 floors high.", "It opened in March 1923, 5 floors high.").missing_atoms).toEqual(["number:1923.5"]);
  });

  it("a duration's count spelled out in the span is not a missing number for a claim writing it in digits (review rv-114)", () => {
    // The duration atoms already normalise "eleven years" and "11 years" to P11Y; the claim's digits
    // were then looked for among the span's numbers, where a spelled count is none.
    expect(guardSupport("She chaired it for 11 years.", "She chaired it for eleven years.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("They arrived after 4 days.", "They arrived four days later.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("The roof fell 3 days ago.", "The roof fell three days ago.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("It stood for 2 decades.", "It stood for two decades.")).toMatchObject({ passed: true, missing_atoms: [] });
    // Another count, or a direction the span does not give, is still missing.
    expect(guardSupport("She chaired it for 12 years.", "She chaired it for eleven years.").missing_atoms).toEqual(["number:12", "temporal:duration:P12Y"]);
    expect(guardSupport("The roof fell 3 days later.", "The roof fell three days ago.").missing_atoms).toEqual(["temporal:relative:+P3D"]);
  });

  it("a compound count such as twenty-one is read whole, not as its last word (review rv-114)", () => {
    // The count matched only its last word: "for twenty-one years" was duration:P1Y, so it passed
    // against a span saying "for one year".
    expect(temporalAtoms("She chaired it for twenty-one years.")).toEqual(["duration:P21Y"]);
    expect(temporalAtoms("It reopened ninety nine days later.")).toEqual(["relative:+P99D"]);
    expect(guardSupport("She chaired it for twenty-one years.", "She chaired it for one year.").missing_atoms).toEqual(["temporal:duration:P21Y"]);
    expect(guardSupport("She chaired it for 21 years.", "She chaired it for twenty-one years.")).toMatchObject({ passed: true, missing_atoms: [] });
  });

  it("a day written before its month with 'of' is still an absolute date (review rv-114)", () => {
    // "the 12th of March 1923" gave only date:1923-03, so a claim dating it 12 March 1923 missed its date.
    expect(temporalAtoms("It opened on the 12th of March, 1923.")).toEqual(["date:1923-03", "date:1923-03-12", "month:march", "year:1923"]);
    expect(guardSupport("It opened on 12 March 1923.", "It opened on the 12th of March 1923.")).toMatchObject({ passed: true, missing_atoms: [] });
    expect(guardSupport("It opened on 13 March 1923.", "It opened on the 12th of March 1923.").missing_atoms).toEqual(["number:13", "temporal:date:1923-03-13"]);
  });

  it("entities count at the start of a sentence too, function words aside", () => {
    const span = "Aldergrove trains reached the coast in March 1923.";
    const r = guardSupport("Kingsbridge trains reached the coast in March 1923.", span);
    expect(r.missing_atoms).toEqual(["entity:kingsbridge"]);
    expect(guardSupport("The trains reached the coast in March 1923.", span).missing_atoms).toEqual([]);
  });

  it("uses the 23 pairs, and its configuration digest follows threshold, pairs, aliases, extractors, normaliser and tokenisation", async () => {
    expect(DEFAULT_PAIRS).toHaveLength(23);
    expect(new Set(DEFAULT_PAIRS.map((p) => p.join("/"))).size).toBe(23);
    const base = await supportConfigDigest(DEFAULT_SUPPORT_CONFIG);
    expect(await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG })).toBe(base);
    const changed = [
      await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG, threshold: 0.6 }),
      await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG, pairs: DEFAULT_PAIRS.slice(1) }),
      await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG, aliases: { ...DEFAULT_SUPPORT_CONFIG.aliases, opened: ["open"] } }),
      await supportConfigDigest(DEFAULT_SUPPORT_CONFIG, { ...GUARD_MANIFEST, tokenisation: { ...GUARD_MANIFEST.tokenisation, version: 2 as 1 } }),
      await supportConfigDigest(DEFAULT_SUPPORT_CONFIG, { ...GUARD_MANIFEST, normaliser: { ...GUARD_MANIFEST.normaliser, version: 2 as 1 } }),
      await supportConfigDigest(DEFAULT_SUPPORT_CONFIG, { ...GUARD_MANIFEST, extractors: { ...GUARD_MANIFEST.extractors, temporal: { ...GUARD_MANIFEST.extractors.temporal, forward: ["later"] } } }),
      await supportConfigDigest(DEFAULT_SUPPORT_CONFIG, { ...GUARD_MANIFEST, extractors: { ...GUARD_MANIFEST.extractors, entity: { ...GUARD_MANIFEST.extractors.entity, sentence_start_stopwords: [] } } }),
      await supportConfigDigest(DEFAULT_SUPPORT_CONFIG, { ...GUARD_MANIFEST, extractors: { ...GUARD_MANIFEST.extractors, numeric: { ...GUARD_MANIFEST.extractors.numeric, pattern: "\\d+" } } }),
    ];
    expect(new Set([base, ...changed]).size).toBe(changed.length + 1);
  });

  it("a multi-span claim is supported when any one span supports it, and the support plane never changes validity", async () => {
    const r = await evaluateSupport("In 2004 the market moved after the bridge was rebuilt.", ["Every Saturday the market opens", "In 2004 the market moved after the bridge was rebuilt"]);
    expect(r.lexical.supported).toBe(true);
    expect(r.guard).toMatchObject({ passed: true });
    expect(r.guard.spans[0].passed).toBe(false);
    const v = await verifyEcReceipt(await reissue({ claim: "Completely unrelated words here." }, corpus, sampleEvents.map((e) => (e.output === sample.claim ? { ...e, output: "Completely unrelated words here." } : e))), corpus, sampleEvents.map((e) => (e.output === sample.claim ? { ...e, output: "Completely unrelated words here." } : e)));
    expect(v.reasons).toEqual(["OK", "SUPPORT_LEXICAL_NONE"]);
  });
});

describe("coverage is required-claim lexical coverage", () => {
  const ref = (span_id: string): EvidenceRef => ({ doc_id: "d", span_id, start: 0, end: 1, text_sha256: "0".repeat(64), quote: "x", doc_version: `sha256:${"0".repeat(64)}`, access: "granted" });
  it("counts a claim once, only when a valid receipt also supports it, and never an empty requirement as covered", () => {
    const c = requiredClaimCoverage([
      { run_id: "a", termination: "answered", required_claims: ["c1", "c2", "c2", "c3"], receipts: [{ claim_id: "c1", valid: true, supported: true, evidence: [ref("s1"), ref("s1")] }, { claim_id: "c1", valid: true, supported: true, evidence: [ref("s1")] }, { claim_id: "c3", valid: true, supported: false, evidence: [ref("s3")] }] },
      { run_id: "b", termination: "answered", required_claims: [], receipts: [{ claim_id: "c1", valid: true, supported: true, evidence: [ref("s2")] }] },
      { run_id: "c", termination: "answered", required_claims: ["c9"], receipts: [{ claim_id: "c9", valid: false, supported: null, evidence: [ref("s3")] }] },
    ]);
    expect(c).toMatchObject({ covered: 1, required: 4, coverage: 0.25, empty_required_sets: 1, runs_counted: 2, unique_references: 1 });
    expect(c.uncovered).toEqual([{ run_id: "a", claim_id: "c2", reason: "no_receipt" }, { run_id: "a", claim_id: "c3", reason: "not_supported" }, { run_id: "c", claim_id: "c9", reason: "integrity_invalid" }]);
    expect(requiredClaimCoverage([{ run_id: "x", termination: "answered", required_claims: [], receipts: [] }]).coverage).toBeNull();
  });

  it("a run that exhausted its budget records why and counts its missing claims as uncovered", () => {
    const c = requiredClaimCoverage([{ run_id: "z", termination: "budget_exhausted", required_claims: ["c1", "c2"], receipts: [{ claim_id: "c1", valid: true, supported: true, evidence: [ref("s1")] }] }]);
    expect(c).toMatchObject({ covered: 1, required: 2, terminations: [{ run_id: "z", termination: "budget_exhausted" }], uncovered: [{ run_id: "z", claim_id: "c2", reason: "budget_exhausted" }] });
  });
});

describe("bundle replay", () => {
  const fixture = () => JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/bundle.json"), "utf8")) as Bundle;
  const pinned = () => JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/fixture-manifest.json"), "utf8"));
  const edit = async (mutate: (b: Bundle) => void) => {
    const b = fixture();
    mutate(b);
    return replayBundle(await resealBundle(b));
  };

  it("reproduces the committed fixture under its pinned outer digest, with a deterministic report", async () => {
    const bundle = fixture();
    const pin = pinned();
    const a = await replayBundle(bundle, { expectedBundleDigest: pin.bundle_digest });
    expect(a).toMatchObject({ decision: "match", receipt_count: pin.receipt_count, verifier_calls: pin.verifier_calls, manifest_problems: [] });
    expect(a.input_digests.bundle).toBe(pin.bundle_digest);
    expect(a.coverage).toMatchObject({ covered: 17, required: 18, uncovered: [{ run_id: "run-006", claim_id: "c1", reason: "budget_exhausted" }] });
    expect(renderReport(a)).toBe(renderReport(await replayBundle(clone(bundle), { expectedBundleDigest: pin.bundle_digest })));
  });

  it("every execution row carries the paper's fields, and so does every replayed row", async () => {
    const bundle = fixture();
    expect(Object.keys(bundle.rows["run-001"] as object).sort()).toEqual(["budget_ledger", "events", "policy", "receipts", "record_id", "required_claims", "rerun", "run_id", "seed"]);
    expect(Object.keys((bundle.rows["run-001"] as ExecutionRow).receipts[0]).sort()).toEqual(["receipt", "support_result", "verifier_result"]);
    const row = (await replayBundle(bundle)).rows[0];
    expect(Object.keys(row).sort()).toEqual(["budget_ledger", "bundle_digest", "events", "policy", "receipts", "record_id", "replay_result", "rerun_digest", "rerun_result", "run_id", "seed"]);
    expect(row).toMatchObject({ run_id: "run-001", record_id: "rec-harbour", seed: 13, replay_result: { decision: "match", mismatch_reasons: [] }, budget_ledger: { termination: "answered" } });
  });

  it("the outer digest is compared with the bundle's and with a pinned value", async () => {
    const b = fixture();
    b.bundle_digest = `sha256:${"1".repeat(64)}`;
    expect((await replayBundle(b)).manifest_problems.map((p) => p.code)).toEqual(["BUNDLE_DIGEST_MISMATCH"]);
    const other = await replayBundle(fixture(), { expectedBundleDigest: `sha256:${"2".repeat(64)}` });
    expect(other).toMatchObject({ decision: "manifest_invalid", manifest_problems: [{ code: "BUNDLE_DIGEST_NOT_EXPECTED" }] });
  });

  it("validates the manifest before trusting any row", async () => {
    const b = fixture();
    ((b.rows["run-002"] as ExecutionRow).receipts[1].receipt as EcReceipt).claim = "The train departed after dawn.";
    const report = await replayBundle(b);
    expect(report).toMatchObject({ decision: "manifest_invalid", receipt_count: 0, manifest_problems: [{ code: "ROW_DIGEST_MISMATCH" }] });
    expect(report.manifest_problems[0].detail).toMatch(/run-002/);
    const extra = fixture();
    extra.rows.smuggled = { hello: 1 };
    expect((await replayBundle(extra)).manifest_problems).toContainEqual({ code: "ROW_UNLISTED", detail: "row smuggled is present but not in the manifest" });
  });

  it("a malformed manifest or row is named with a code: runs: 5, required_claims: \"c1c2\", a fractional seed", async () => {
    const runs5 = fixture() as unknown as Record<string, any>;
    runs5.manifest.runs = 5;
    const a = await replayBundle(runs5);
    expect(a.decision).toBe("manifest_invalid");
    expect(a.manifest_problems).toContainEqual({ code: "MANIFEST_MALFORMED", detail: 'manifest has unknown field "runs" (requirements belong to each execution row)' });
    const b = await edit((x) => ((x.rows["run-001"] as Record<string, unknown>).required_claims = "c1c2"));
    expect(b.manifest_problems).toEqual([{ code: "ROW_MALFORMED", detail: "row run-001: required_claims must be an array of claim ids (got a string)" }]);
    expect(JSON.stringify(b)).not.toMatch(/"c","1"/);
    const c = await edit((x) => ((x.rows["run-001"] as Record<string, unknown>).seed = 13.5));
    expect(c.manifest_problems).toEqual([{ code: "ROW_MALFORMED", detail: "row run-001: seed must be a non-negative integer" }]);
    for (const broken of [null, [], { manifest: null }, { bundle_version: "ec-bundle/2", manifest: { rows: "x" }, rows: {} }]) {
      const r = await replayBundle(broken);
      expect(r.decision).toBe("manifest_invalid");
      expect(r.manifest_problems.every((p) => typeof p.code === "string" && typeof p.detail === "string")).toBe(true);
    }
  });

  it("a bundle that is not an object, or carries an unknown field or another version, is BUNDLE_MALFORMED", async () => {
    const codes = async (b: unknown) => (await replayBundle(b)).manifest_problems.map((p) => p.code);
    expect(await codes("bundle")).toEqual(["BUNDLE_MALFORMED"]);
    expect(await codes({ ...fixture(), extra: 1 })).toEqual(["BUNDLE_MALFORMED"]);
    expect(await codes({ ...fixture(), bundle_version: "ec-bundle/1" })).toEqual(["BUNDLE_MALFORMED"]);
    const noRows = await replayBundle({ ...fixture(), rows: [] });
    expect(noRows).toMatchObject({ decision: "manifest_invalid", manifest_problems: [{ code: "BUNDLE_MALFORMED", detail: "rows must be an object by row id" }] });
  });

  it("a manifest row listed twice is ROW_DUPLICATE; one listed with no row is ROW_MISSING", async () => {
    const twice = await edit((b) => b.manifest.rows.push({ ...b.manifest.rows[1] }));
    expect(twice.decision).toBe("manifest_invalid");
    expect(twice.manifest_problems).toEqual([{ code: "ROW_DUPLICATE", detail: `row ${fixture().manifest.rows[1].id} is listed twice` }]);
    const b = fixture();
    delete b.rows["run-002"];
    const missing = await replayBundle(b);
    expect(missing.decision).toBe("manifest_invalid");
    expect(missing.manifest_problems.map((p) => p.code)).toEqual(["ROW_MISSING"]);
    expect(missing.manifest_problems[0].detail).toBe("row run-002 is listed but absent");
  });

  it("a corpus row not of its form is CORPUS_MALFORMED; one whose digest is not manifest.corpus_digest is CORPUS_IDENTITY_MISMATCH", async () => {
    const bad = await edit((b) => ((b.rows.corpus as Record<string, unknown>).broken = { text: 5 }));
    expect(bad.decision).toBe("manifest_invalid");
    expect(bad.manifest_problems).toEqual([{ code: "CORPUS_MALFORMED", detail: 'corpus["broken"].text must be a string' }]);
    const other = await edit((b) => (b.manifest.corpus_digest = `sha256:${"5".repeat(64)}`));
    expect(other.decision).toBe("manifest_invalid");
    expect(other.manifest_problems.map((p) => p.code)).toEqual(["CORPUS_IDENTITY_MISMATCH"]);
  });

  describe("a budget ledger that contradicts itself or its row is BUDGET_LEDGER_INCONSISTENT, and no row is trusted", () => {
    const ledgerOf = (b: Bundle, id: string) => (b.rows[id] as ExecutionRow).budget_ledger;
    const codes = (r: { manifest_problems: { code: string }[] }) => r.manifest_problems.map((p) => p.code);

    it("a count over its maximum with any termination but budget_exhausted", async () => {
      const calls = await edit((b) => Object.assign(ledgerOf(b, "run-001"), { calls: 13, max_calls: 12 }));
      expect(calls).toMatchObject({ decision: "manifest_invalid", receipt_count: 0, rows: [], coverage: null });
      expect(calls.manifest_problems).toEqual([
        { code: "BUDGET_LEDGER_INCONSISTENT", detail: "row run-001: budget_ledger is over its budget (calls 13 of max_calls 12, declared_tokens 35 of max_declared_tokens 256) yet its termination is answered, not budget_exhausted" },
      ]);
      const tokens = await edit((b) => Object.assign(ledgerOf(b, "run-002"), { declared_tokens: 257, termination: "timeout" }));
      expect(tokens.manifest_problems).toEqual([
        { code: "BUDGET_LEDGER_INCONSISTENT", detail: "row run-002: budget_ledger is over its budget (calls 4 of max_calls 12, declared_tokens 257 of max_declared_tokens 256) yet its termination is timeout, not budget_exhausted" },
      ]);
      // Over its budget and saying so is consistent: the call that spent the budget is counted.
      expect((await edit((b) => Object.assign(ledgerOf(b, "run-006"), { calls: 3 }))).decision).toBe("match");
    });

    it("budget_exhausted under both maxima is consistent: a runner stops when the next call would not fit", async () => {
      // Review rv-99: a rule that budget_exhausted needs a count at its maximum refused such a ledger.
      expect((await edit((b) => Object.assign(ledgerOf(b, "run-006"), { max_calls: 3 }))).decision).toBe("match");
      expect((await edit((b) => Object.assign(ledgerOf(b, "run-006"), { max_calls: 3, declared_tokens: 200 }))).decision).toBe("match");
    });

    it("fewer verifier calls than the row's receipts; more is consistent", async () => {
      const r = await edit((b) => Object.assign(ledgerOf(b, "run-003"), { verifier_calls: 3 }));
      expect(r.manifest_problems).toEqual([{ code: "BUDGET_LEDGER_INCONSISTENT", detail: "row run-003: budget_ledger.verifier_calls 3 is fewer than the row's 4 receipts, each verified online" }]);
      expect((await edit((b) => Object.assign(ledgerOf(b, "run-003"), { verifier_calls: 9 }))).decision).toBe("match");
      expect((await edit((b) => Object.assign(ledgerOf(b, "run-006"), { verifier_calls: 0 }))).decision).toBe("match");
    });

    it("the review's ledger {calls: 99, max_calls: 1, verifier_calls: 0, termination: timeout} on a row with receipts breaks two rules and no longer replays as match", async () => {
      const r = await edit((b) => Object.assign(ledgerOf(b, "run-001"), { calls: 99, max_calls: 1, verifier_calls: 0, termination: "timeout" }));
      expect(r.decision).toBe("manifest_invalid");
      expect(codes(r)).toEqual(["BUDGET_LEDGER_INCONSISTENT", "BUDGET_LEDGER_INCONSISTENT"]);
      expect(r.manifest_problems[1].detail).toBe("row run-001: budget_ledger.verifier_calls 0 is fewer than the row's 4 receipts, each verified online");
      // A ledger not of its form is ROW_MALFORMED only: consistency is judged on a well-formed row.
      const malformed = await edit((b) => Object.assign(ledgerOf(b, "run-001"), { calls: 1.5, verifier_calls: 0 }));
      expect(codes(malformed)).toEqual(["ROW_MALFORMED"]);
    });
  });

  it("a stored integrity result that differs from the recomputed one is a mismatch, even when the recomputed one is valid: verifier drift", async () => {
    const report = await edit((b) => {
      const rec = (b.rows["run-001"] as ExecutionRow).receipts[0];
      rec.verifier_result = { valid: false, reasons: ["QUOTE_MISMATCH"] };
    });
    expect(report.decision).toBe("mismatch");
    const row = report.rows.find((r) => r.run_id === "run-001")!;
    expect(row.receipts[0]).toMatchObject({ replay_mismatch: true, mismatch_reasons: ["VERIFIER_DRIFT"], actual: { integrity: { valid: true, reasons: ["OK"] } } });
    expect(row.replay_result).toEqual({ decision: "mismatch", mismatch_reasons: ["VERIFIER_DRIFT"] });
    expect(report.rows.filter((r) => r.replay_result.decision === "mismatch")).toHaveLength(1);
  });

  it("without a pin replay proves self-consistency only: a resealed edit replays as match, the pin catches it (and the docs say so)", async () => {
    const b = fixture();
    (b.rows["run-002"] as ExecutionRow).record_id = "rec-elsewhere";
    const resealed = await resealBundle(b);
    expect((await replayBundle(resealed)).decision).toBe("match");
    expect((await replayBundle(resealed, { expectedBundleDigest: pinned().bundle_digest })).manifest_problems.map((p) => p.code)).toEqual(["BUNDLE_DIGEST_NOT_EXPECTED"]);
    const docs = readFileSync(resolve(PROJECT_ROOT, "docs/ec-receipts.md"), "utf8").replace(/\s+/g, " ");
    expect(docs).toMatch(/Replay without a pin .* proves only that a bundle is self-consistent/);
  });

  it("a bundle made by another verifier version or under another support configuration never replays as match", async () => {
    const version = await edit((b) => (b.manifest.verifier_version = "countersign-ec-verifier/1"));
    expect(version.decision).toBe("mismatch");
    expect(version.rows.map((r) => r.replay_result.mismatch_reasons)).toEqual(version.rows.map(() => ["VERIFIER_DRIFT"]));
    expect(version.rows.every((r) => r.receipts.every((x) => !x.replay_mismatch))).toBe(true); // every receipt itself reproduced
    const config = await edit((b) => (b.manifest.support_config_digest = `sha256:${"4".repeat(64)}`));
    expect(config.decision).toBe("mismatch");
    expect(config.rows.map((r) => r.replay_result.mismatch_reasons)).toEqual(config.rows.map(() => ["ENVIRONMENT_DRIFT"]));
  });

  it("each mismatch names its reason: quote, hash, source, schema, trace digest, policy divergence, environment drift", async () => {
    const receiptOf = (b: Bundle, run = "run-003", i = 2) => (b.rows[run] as ExecutionRow).receipts[i].receipt as EcReceipt;
    const reasons = async (mutate: (b: Bundle) => void) => (await edit(mutate)).rows.find((r) => r.replay_result.decision === "mismatch")?.replay_result.mismatch_reasons;
    expect(await reasons((b) => (receiptOf(b).evidence[0].quote = "forged"))).toEqual(["QUOTE"]);
    expect(await reasons((b) => (receiptOf(b).evidence[0].text_sha256 = "0".repeat(64)))).toEqual(["HASH"]);
    expect(await reasons((b) => (receiptOf(b).evidence[0].span_id = "s9"))).toEqual(["SOURCE"]);
    expect(await reasons((b) => ((receiptOf(b) as unknown as Record<string, unknown>).note = "x"))).toEqual(["SCHEMA"]);
    expect(await reasons((b) => ((b.rows["run-003"] as ExecutionRow).events[0].output = "edited"))).toEqual(["TRACE_DIGEST"]);
    expect(await reasons((b) => ((b.rows["run-003"] as ExecutionRow).policy = "policy/other/v1"))).toEqual(["POLICY_DIVERGENCE"]);
    expect(await reasons((b) => ((b.rows["run-003"] as ExecutionRow).receipts[0].support_result.config_digest = `sha256:${"3".repeat(64)}`))).toEqual(["ENVIRONMENT_DRIFT"]);
  });

  it("a row whose trace is not of its form is a schema mismatch, also when it holds no receipt to report it (the run that exhausted its budget)", async () => {
    const fixtureRow = (fixture().rows["run-006"] as ExecutionRow);
    expect(fixtureRow.receipts).toEqual([]);
    for (const mutate of [
      (e: TraceEvent[]) => ((e[1] as unknown as Record<string, unknown>).action_type = 0),
      (e: TraceEvent[]) => ((e[0] as unknown as Record<string, unknown>).oracle = "the answer is c1"),
      (e: TraceEvent[]) => (e[1] = "answer" as unknown as TraceEvent),
      // No answer event at all: a missing answer is an explicit answer event, so this is no committed execution.
      (e: TraceEvent[]) => e.splice(e.findIndex((x) => x.action_type === "answer"), 1),
    ]) {
      const report = await edit((b) => mutate((b.rows["run-006"] as ExecutionRow).events));
      const row = report.rows.find((r) => r.run_id === "run-006")!;
      expect({ decision: report.decision, row: row.replay_result, trace: row.events.trace_digest }).toEqual({ decision: "mismatch", row: { decision: "mismatch", mismatch_reasons: ["SCHEMA"] }, trace: null });
    }
    // A row with receipts already reports it through them, with the same reason.
    const withReceipts = await edit((b) => (((b.rows["run-003"] as ExecutionRow).events[11] as unknown as Record<string, unknown>).oracle = "x"));
    expect(withReceipts.rows.find((r) => r.run_id === "run-003")!.replay_result.mismatch_reasons).toEqual(["SCHEMA"]);
  });

  it("an execution rerun is compared by trace digest: a tool that answers differently, a policy that acts differently, a rerun that timed out", async () => {
    const rerun = async (change: ((events: TraceEvent[]) => void) | "timeout") => {
      const report = await edit((b) => {
        const row = b.rows["run-002"] as ExecutionRow;
        const events = clone(row.events);
        if (change === "timeout") return void (row.rerun = { digest: null, events: null, timed_out: true });
        change(events);
        row.rerun = { digest: null, events, timed_out: false };
      });
      return report;
    };
    // A rerun's digest must be its own trace's digest: fill it in after the edit.
    const withDigest = async (change: (events: TraceEvent[]) => void) => {
      const b = fixture();
      const row = b.rows["run-002"] as ExecutionRow;
      const events = clone(row.events);
      change(events);
      row.rerun = { digest: await traceDigest(events), events, timed_out: false };
      return (await replayBundle(await resealBundle(b))).rows.find((r) => r.run_id === "run-002")!;
    };
    expect((await withDigest(() => {})).rerun_result).toEqual({ compared: true, match: true, first_divergence: null, reason: null });
    const tool = await withDigest((e) => (e[0].output = "retrieved rail-log (cached)"));
    expect(tool.rerun_result).toEqual({ compared: true, match: false, first_divergence: { index: 0, field: "output" }, reason: "TOOL_NONDETERMINISM" });
    expect(tool.replay_result).toEqual({ decision: "mismatch", mismatch_reasons: ["TOOL_NONDETERMINISM"] });
    const policy = await withDigest((e) => (e[1].output = "The night train reached the coast."));
    expect(policy.rerun_result).toMatchObject({ first_divergence: { index: 1, field: "output" }, reason: "POLICY_DIVERGENCE" });
    expect((await rerun("timeout")).rows.find((r) => r.run_id === "run-002")!.replay_result.mismatch_reasons).toEqual(["TIMEOUT"]);
    expect((await rerun(() => {})).rows.find((r) => r.run_id === "run-002")!.rerun_result.reason).toBe("SCHEMA");
  });

  it("npm run replay exits 0 on the pinned fixture, 1 on a mismatch or another pin, 2 on bad usage", async () => {
    const tsx = resolve(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
    const replay = (...args: string[]) => spawnSync(process.execPath, [tsx, "cli/replay.ts", ...args], { cwd: PROJECT_ROOT, encoding: "utf8" });
    const ok = replay("vectors/ec-agent/bundle.json", "--expect", pinned().bundle_digest);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).decision).toBe("match");
    expect(replay("vectors/ec-agent/bundle.json", "--expect", `sha256:${"2".repeat(64)}`).stderr).toMatch(/BUNDLE_DIGEST_NOT_EXPECTED/);
    const file = resolve(mkdtempSync(resolve(tmpdir(), "cs-replay-")), "bundle.json");
    const bundle = await scenarioBundle(runs);
    ((bundle.rows["run-001"] as ExecutionRow).receipts[0].receipt as EcReceipt).claim += "!";
    writeFileSync(file, JSON.stringify(bundle));
    const bad = replay(file);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/manifest invalid.*ROW_DIGEST_MISMATCH/);
    expect(replay("vectors/ec-agent/bundle.json", "--expect", "nope").status).toBe(2);
  });

  it("buildBundle records the online verifier and support results, and replay holds a receipt to its row", async () => {
    const ledger = { max_calls: 9, calls: 9, max_declared_tokens: 9, declared_tokens: 9, verifier_calls: 1, termination: "answered" as const };
    const b = await buildBundle(corpus, [{ run_id: "x", record_id: "r", policy: sample.policy_id, seed: 1, required_claims: ["c3"], events: sampleEvents, receipts: [sample], budget_ledger: ledger }]);
    expect((b.rows.x as ExecutionRow).receipts[0]).toMatchObject({ verifier_result: { valid: true, reasons: ["OK"] }, support_result: { evaluated: true, supported: true, config_digest: b.manifest.support_config_digest } });
    expect((await replayBundle(b)).rows[0].replay_result.mismatch_reasons).toEqual(["SCHEMA"]); // the receipt belongs to run-003, not x
  });

  it("a receipt covers a required claim of its own run only, not of a row it was copied or reassigned into", async () => {
    const ledger = { max_calls: 9, calls: 9, max_declared_tokens: 9, declared_tokens: 9, verifier_calls: 1, termination: "answered" as const };
    const run = { record_id: "r", seed: 1, required_claims: ["c3"], events: sampleEvents, budget_ledger: ledger };
    // The receipt's own run: covered.
    const own = await replayBundle(await buildBundle(corpus, [{ ...run, run_id: sample.run_id, policy: sample.policy_id, receipts: [sample] }]));
    expect(own.coverage).toMatchObject({ covered: 1, required: 1, uncovered: [] });
    // The same receipt in another run's row (same events, so it verifies) or under another policy: that run has no receipt of c3.
    for (const [run_id, policy] of [["x", sample.policy_id], [sample.run_id, "policy/other/v1"]]) {
      const report = await replayBundle(await buildBundle(corpus, [{ ...run, run_id, policy, receipts: [sample] }]));
      expect(report.rows[0].receipts[0].actual.integrity.valid).toBe(true);
      expect(report.coverage).toMatchObject({ covered: 0, required: 1, unique_references: 0, uncovered: [{ run_id, claim_id: "c3", reason: "no_receipt" }] });
    }
  });
});

describe("fixtures and the mutation audit", () => {
  it("the committed fixtures are exactly what the generator produces", async () => {
    for (const { path, text } of await ecFixtures()) expect(text, path).toBe(readFileSync(path, "utf8"));
  });

  it("runs as the paper describes and the committed report is exactly a fresh run", async () => {
    const report = await runAudit(runs);
    expect(JSON.stringify(report, null, 2) + "\n").toBe(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/audit-report.json"), "utf8"));
    const byClass = Object.fromEntries(report.classes.map((c) => [c.class, c]));
    // Text changed inside the cited span, and offsets driven to every offset code.
    expect(byClass["text inside the cited span"]).toMatchObject({ rejected_by_target: 17, target: "SPAN_HASH_MISMATCH" });
    for (const [cls, code] of [["offset off by one", "SPAN_HASH_MISMATCH"], ["offset not an integer", "OFFSET_NOT_INTEGER"], ["offset negative", "OFFSET_NEGATIVE"], ["offsets reversed", "OFFSET_REVERSED"], ["offset out of range", "OFFSET_OUT_OF_RANGE"]]) {
      expect(byClass[cls], cls).toMatchObject({ trials: 17, rejected_by_target: 17, target: code });
    }
    expect(report.structural).toMatchObject({ trials: 272, rejected: 272, rejected_by_target: 272 });
    // Lexical-adversarial receipts pass integrity and the lexical predicate, then fail the guard.
    expect(report.lexical_adversarial).toMatchObject({ trials: 17, verifier_accepted: 17, guard_rejected: 17, clean_claims_guard_passed: 15 });
    expect(report.lexical_adversarial.clean_claims_guard_rejected.map((o) => o.id)).toEqual(["run-002/c4", "run-003/c2"]);
    // False rejections with the resolution 17 clean receipts allow.
    expect(report.binding).toMatchObject({ detected: report.binding.mutations, clean: 17, false_rejections: 0, false_rejection_rate: 0, false_rejection_resolution: 0.0588 });
    // Remove-one-property ablation: the joint digest alone stops a policy reassignment, the event schema alone an oracle field.
    const through = (p: string) => report.ablation.find((a) => a.disabled === p)!.classes_getting_through.map((c) => c.class);
    expect(through("joint_digest")).toContain("cross-policy reassignment");
    expect(through("event_schema")).toEqual(["oracle-field injection"]);
    expect(through("access")).toEqual(["access state"]);
    expect(report.ablation.every((a) => a.clean_rejected === 0)).toBe(true);
    expect(report.paper.binding).toEqual({ mutations: 1280, detected: 1275, detection_rate: 0.9961, false_rejection_rate: 0.0031 });
  }, 120_000);
});
