import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../scripts/local-server.js";
import { asciiCanonical } from "../../worker/protocol/ec/canonical.js";
import { buildBundle, renderReport, replayBundle } from "../../worker/protocol/ec/bundle.js";
import { requiredClaimCoverage } from "../../worker/protocol/ec/coverage.js";
import { checkEvidence, codePointIndex, referenceTo, type EvidenceRef } from "../../worker/protocol/ec/evidence.js";
import { traceProblems, type TraceEvent } from "../../worker/protocol/ec/events.js";
import { verifyEcReceipt, type EcReceipt } from "../../worker/protocol/ec/receipt.js";
import { DEFAULT_PAIRS, DEFAULT_SUPPORT_CONFIG, evaluateSupport, guardSupport, lexicalSupport, supportConfigDigest } from "../../worker/protocol/ec/support.js";
import { casefold, tokens } from "../../worker/protocol/ec/text.js";
import { runAudit } from "../../vectors/ec-agent/audit.js";
import { buildRuns, scenarioBundle, type BuiltRun } from "../../vectors/ec-agent/build.js";
import { ecFixtures, TWO_EVENTS } from "../../vectors/ec-agent/generate.js";
import { corpus } from "../../vectors/ec-agent/scenario.js";

/** Runs a Python snippet that reads JSON on stdin and prints JSON: the reference implementation. */
function python(code: string, input: unknown): any {
  const out = execFileSync("python3", ["-c", code], { input: JSON.stringify(input), encoding: "utf8" });
  return JSON.parse(out);
}

let runs: BuiltRun[];
let sample: EcReceipt;
let sampleEvents: TraceEvent[];
beforeAll(async () => {
  runs = await buildRuns();
  sample = runs[2].receipts[2].receipt; // cites a span after a combining mark and before an emoji
  sampleEvents = runs[2].events;
});

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));
const integrity = async (r: unknown, c = corpus, e: unknown = sampleEvents) => (await verifyEcReceipt(r, c, e)).reasons.filter((x) => !x.startsWith("SUPPORT_"));

describe("evidence spans count Unicode code points", () => {
  it("offsets skip an astral character once and a combining mark as its own code point", async () => {
    const doc = { text: "⚓ Zoe\u0308 saw 📓 the red stair.", version: "v1" };
    const ref = await referenceTo({ d: doc }, "d", "s", "the red stair");
    expect([ref.start, ref.end]).toEqual([13, 26]);
    expect(doc.text.indexOf("the red stair")).toBe(14);
    const check = await checkEvidence(ref, 0, { d: doc }, codePointIndex({ d: doc }));
    expect(check).toEqual({ findings: [], selected: "the red stair" });
  });

  const refCases: [string, (r: EvidenceRef) => unknown, string][] = [
    ["a changed quote", (r) => ({ ...r, quote: r.quote.replace("blue", "navy") }), "QUOTE_MISMATCH"],
    ["an off-by-one offset", (r) => ({ ...r, end: r.end - 1, quote: r.quote }), "SPAN_HASH_MISMATCH"],
    ["a wrong doc id", (r) => ({ ...r, doc_id: "no-such-doc" }), "SOURCE_UNKNOWN"],
    ["a wrong version", (r) => ({ ...r, doc_version: "v0" }), "SOURCE_VERSION_MISMATCH"],
    ["a negative offset", (r) => ({ ...r, start: -1 }), "OFFSET_NEGATIVE"],
    ["reversed offsets", (r) => ({ ...r, start: r.end, end: r.start }), "OFFSET_REVERSED"],
    ["an empty span", (r) => ({ ...r, end: r.start }), "OFFSET_EMPTY"],
    ["a non-integer offset", (r) => ({ ...r, start: r.start + 0.5 }), "OFFSET_NOT_INTEGER"],
    ["an out-of-range offset", (r) => ({ ...r, end: 10_000 }), "OFFSET_OUT_OF_RANGE"],
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
    const quote = await checkEvidence({ ...sample.evidence[0], quote: "x" + sample.evidence[0].quote.slice(1) }, 0, corpus, codePointIndex(corpus));
    expect(quote.findings.map((f) => f.reason)).toEqual(["QUOTE_MISMATCH"]);
  });

  it("an altered source fails the corpus digest; a revoked or unauthorised source has its own code", async () => {
    const altered = clone(corpus);
    altered.expedition.text += " Revised.";
    expect(await integrity(sample, altered)).toEqual(["CORPUS_DIGEST_MISMATCH"]);
    for (const [access, code] of [["revoked", "SOURCE_REVOKED"], ["unauthorized", "SOURCE_UNAUTHORIZED"]] as const) {
      const c = clone(corpus);
      c.expedition.access = access;
      expect(await integrity(sample, c)).toEqual([code]);
    }
  });

  it("replay under a substituted document version fails", async () => {
    const c = clone(corpus);
    c.expedition.version = "v2";
    expect(await integrity(sample, c)).toEqual(["CORPUS_DIGEST_MISMATCH", "SOURCE_VERSION_MISMATCH"]);
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

describe("events: closed schema and canonical trace", () => {
  const base = () => clone(sampleEvents) as unknown as Record<string, unknown>[];
  it.each([
    ["a duplicated action id", (e: Record<string, unknown>[]) => (e[1].action_id = e[0].action_id), "EVENT_DUPLICATE_ACTION_ID"],
    ["an undeclared field", (e: Record<string, unknown>[]) => (e[0].confidence = 1), "EVENT_SCHEMA_INVALID"],
    ["a missing field", (e: Record<string, unknown>[]) => delete e[0].tool, "EVENT_SCHEMA_INVALID"],
    ["an invalid action type", (e: Record<string, unknown>[]) => (e[0].action_type = "think"), "EVENT_ACTION_TYPE_INVALID"],
    ["a non-integer number", (e: Record<string, unknown>[]) => (e[0].attempt = 1.5), "EVENT_SCHEMA_INVALID"],
    ["an empty action id", (e: Record<string, unknown>[]) => (e[0].action_id = ""), "EVENT_SCHEMA_INVALID"],
    ["an index carried as a field", (e: Record<string, unknown>[]) => (e[0].index = 0), "EVENT_SCHEMA_INVALID"],
  ])("%s fails canonical trace verification", async (_name, mutate, code) => {
    const events = base();
    mutate(events);
    expect(traceProblems(events).map((p) => p.reason)).toContain(code);
    expect(await integrity(sample, corpus, events)).toContain(code);
  });

  it("a trace without an answer has no execution digest", async () => {
    const events = base().filter((e) => e.action_type !== "answer");
    expect(await integrity(sample, corpus, events)).toContain("EVENT_NO_ANSWER");
  });

  it("covers exactly the declared action types, including the ones the protocol names", async () => {
    const { ACTION_TYPES } = await import("../../worker/protocol/ec/events.js");
    for (const t of ["retrieval", "stop", "answer", "claim_emission", "tool_error", "empty_observation", "retry", "access_denied"]) expect(ACTION_TYPES).toContain(t);
  });

  it("canonicalises byte for byte as Python's json.dumps(sort_keys, compact, ensure_ascii), and the published vector's digest is Python's too", async () => {
    const vector = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/trace-vector.json"), "utf8"));
    const py = python(
      `import json, sys, hashlib
v = json.load(sys.stdin)
doc = {"domain": v["domain"], "events": [dict(e, index=i) for i, e in enumerate(v["events"])], "schema_version": v["schema_version"]}
canon = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
print(json.dumps({"canonical": canon, "digest": "sha256:" + hashlib.sha256((v["domain"] + "\\n" + canon).encode()).hexdigest()}))`,
      vector,
    );
    expect(vector.canonical).toBe(py.canonical);
    expect(vector.digest).toBe(py.digest);
    expect(vector.events).toEqual(TWO_EVENTS);
    expect(vector.canonical).toContain("\\u2615");
    expect(vector.canonical).toContain("\\ud83d\\udcd3");
    const weird = { k: "tab\t nul\u0000 del\u007f é 😀 \"q\" \\ /" };
    expect(asciiCanonical(weird)).toBe(python(`import json,sys; print(json.dumps(json.dumps(json.load(sys.stdin), sort_keys=True, separators=(",", ":"), ensure_ascii=True)))`, weird));
  });
});

describe("support plane", () => {
  it("folds case as Python's str.casefold, not as toLowerCase", () => {
    const samples = ["Straße", "ẞIG", "ΣΊΣΥΦΟΣ ς", "ﬁne ﬂow", "İstanbul", "ǅ", "Ꭰꭰ", "MÜNCHEN"];
    expect(samples.map(casefold)).toEqual(python(`import json,sys; print(json.dumps([s.casefold() for s in json.load(sys.stdin)]))`, samples));
    expect(casefold("Straße")).toBe("strasse");
    expect("Straße".toLowerCase()).toBe("straße");
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
    expect(lexicalSupport("the red stair", "red, stair the")).toMatchObject({ substring: false, supported: true });
    for (const [claim, span] of [["", "text"], ["text", ""], ["a ! ?", "a ! ?"], ["   ", "   "]]) expect(lexicalSupport(claim, span)).toMatchObject({ supported: false, reason: "SUPPORT_EMPTY" });
  });

  it("the guard rejects contradictions and missing atoms that the lexical predicate lets through", () => {
    const span = "The night train from Aldergrove reached the coast at 6:40 on a Tuesday in March 1923.";
    const conflict = guardSupport("The night train from Aldergrove left the coast in March 1923.", span);
    expect(conflict.lexical.supported).toBe(true);
    expect(conflict).toMatchObject({ passed: false, reasons: ["GUARD_CONFLICT"], conflicts: [["reached", "left"]] });
    const number = guardSupport("The night train from Aldergrove reached the coast in March 1924.", span);
    expect(number).toMatchObject({ passed: false, reasons: ["GUARD_MISSING_ATOM"] });
    expect(number.missing_atoms).toEqual(["number:1924", "temporal:1924"]);
    const entity = guardSupport("The night train from Kingsbridge reached the coast in March 1923.", span);
    expect(entity.missing_atoms).toEqual(["entity:kingsbridge"]);
    const month = guardSupport("The night train from Aldergrove reached the coast in May 1923.", span);
    expect(month.missing_atoms).toEqual(["temporal:may"]);
    expect(guardSupport("The night train from Aldergrove reached the coast in March 1923.", span)).toMatchObject({ passed: true, reasons: ["GUARD_PASS"] });
  });

  it("uses exactly the 23 contradiction pairs, and its configuration digest follows threshold and pairs", async () => {
    expect(DEFAULT_PAIRS).toHaveLength(23);
    expect(new Set(DEFAULT_PAIRS.map((p) => p.join("/"))).size).toBe(23);
    const base = await supportConfigDigest(DEFAULT_SUPPORT_CONFIG);
    expect(await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG })).toBe(base);
    expect(await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG, threshold: 0.6 })).not.toBe(base);
    expect(await supportConfigDigest({ ...DEFAULT_SUPPORT_CONFIG, pairs: DEFAULT_PAIRS.slice(1) })).not.toBe(base);
  });

  it("a multi-span claim is supported when any one span supports it, and the support plane never changes validity", async () => {
    const r = await evaluateSupport("In 2004 the market moved after the bridge was rebuilt.", ["Every Saturday the market opens", "In 2004 the market moved after the bridge was rebuilt"]);
    expect(r.lexical.supported).toBe(true);
    expect(r.guard).toMatchObject({ passed: true });
    expect(r.guard.spans[0].passed).toBe(false);
    const unsupported = { ...sample, claim: "Completely unrelated words here." };
    const v = await verifyEcReceipt(unsupported, corpus, sampleEvents);
    expect(v.reasons.at(-1)).toBe("SUPPORT_LEXICAL_NONE");
    expect(v.reasons).not.toContain("SUPPORT_LEXICAL_NONE_AS_INTEGRITY");
  });
});

describe("coverage", () => {
  const ref = (span_id: string) => ({ doc_id: "d", span_id, start: 0, end: 1, text_sha256: "0".repeat(64), quote: "x" });
  it("de-duplicates references by identity and never counts an empty requirement as covered", () => {
    const c = requiredClaimCoverage([
      { run_id: "a", required_claims: ["c1", "c2", "c2"], receipts: [{ claim_id: "c1", valid: true, evidence: [ref("s1"), ref("s1")] }, { claim_id: "c1", valid: true, evidence: [ref("s1")] }] },
      { run_id: "b", required_claims: [], receipts: [{ claim_id: "c1", valid: true, evidence: [ref("s2")] }] },
      { run_id: "c", required_claims: ["c9"], receipts: [{ claim_id: "c9", valid: false, evidence: [ref("s3")] }] },
    ]);
    expect(c).toMatchObject({ covered: 1, required: 3, coverage: 1 / 3, empty_required_sets: 1, runs_counted: 2, unique_references: 1 });
    expect(c.uncovered).toEqual([{ run_id: "a", claim_id: "c2" }, { run_id: "c", claim_id: "c9" }]);
    expect(requiredClaimCoverage([{ run_id: "x", required_claims: [], receipts: [] }]).coverage).toBeNull();
  });
});

describe("bundle replay", () => {
  it("reproduces the committed fixture exactly, with a deterministic report", async () => {
    const bundle = JSON.parse(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/bundle.json"), "utf8"));
    const a = await replayBundle(bundle);
    expect(a).toMatchObject({ decision: "match", receipt_count: 16, manifest_problems: [] });
    expect(a.coverage).toMatchObject({ coverage: 1, covered: 16 });
    expect(renderReport(a)).toBe(renderReport(await replayBundle(JSON.parse(JSON.stringify(bundle)))));
    expect(a.receipts.every((r) => r.expected.joint_digest === r.actual.joint_digest)).toBe(true);
  });

  it("validates the manifest before trusting any row", async () => {
    const bundle = await scenarioBundle(runs);
    (bundle.rows["run-002/c2"] as EcReceipt).claim = "The train departed after dawn.";
    const report = await replayBundle(bundle);
    expect(report).toMatchObject({ decision: "manifest_invalid", receipt_count: 0 });
    expect(report.manifest_problems[0]).toMatch(/run-002\/c2/);
    const extra = await scenarioBundle(runs);
    extra.rows.smuggled = { hello: 1 };
    expect((await replayBundle(extra)).manifest_problems).toContain("row smuggled is present but not in the manifest");
  });

  it("reports a stored integrity result that differs from the recomputed one as a mismatch, even when the recomputed one is valid", async () => {
    const tampered = runs.map((r) => ({ run_id: r.run_id, events: r.events, receipts: r.receipts.map(({ id, receipt }) => ({ id, receipt: id === "run-001/c1" ? { ...receipt, integrity: { valid: false, reasons: ["QUOTE_MISMATCH"] } } : receipt })) }));
    const report = await replayBundle(await buildBundle(corpus, tampered));
    expect(report.decision).toBe("mismatch");
    const row = report.receipts.find((r) => r.id === "run-001/c1")!;
    expect(row).toMatchObject({ replay_mismatch: true, actual: { integrity: { valid: true, reasons: ["OK"] } } });
    expect(report.receipts.filter((r) => r.replay_mismatch)).toHaveLength(1);
  });

  it("npm run replay exits 0 on the fixture and 1 on a mismatch", async () => {
    const tsx = resolve(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
    const ok = spawnSync(process.execPath, [tsx, "cli/replay.ts", "vectors/ec-agent/bundle.json"], { cwd: PROJECT_ROOT, encoding: "utf8" });
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).decision).toBe("match");
    const { writeFileSync, mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const file = resolve(mkdtempSync(resolve(tmpdir(), "cs-replay-")), "bundle.json");
    const bundle = await scenarioBundle(runs);
    (bundle.rows["run-001/c1"] as EcReceipt).claim += "!";
    writeFileSync(file, JSON.stringify(bundle));
    const bad = spawnSync(process.execPath, [tsx, "cli/replay.ts", file], { cwd: PROJECT_ROOT, encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/manifest invalid/);
  });
});

describe("fixtures and the mutation audit", () => {
  it("the committed fixtures are exactly what the generator produces", async () => {
    for (const { path, text } of await ecFixtures()) expect(text, path).toBe(readFileSync(path, "utf8"));
  });

  it("rejects all 144 structural mutations by their targeted checks, every binding mutation, and no clean receipt", async () => {
    const report = await runAudit(runs);
    expect(report.structural).toEqual({ trials: 144, rejected: 144, rejected_by_target: 144 });
    expect(report.lexical_adversarial).toEqual({ trials: 16, lexical_accepted: 16, guard_rejected: 16, clean_claims_guard_passed: 16 });
    expect(report.binding.mutations).toBeGreaterThanOrEqual(1280);
    expect(report.binding).toMatchObject({ detected: report.binding.mutations, clean: 16, false_rejections: 0 });
    expect(report.classes).toHaveLength(18);
    expect(JSON.stringify(report, null, 2) + "\n").toBe(readFileSync(resolve(PROJECT_ROOT, "vectors/ec-agent/audit-report.json"), "utf8"));
  });
});
