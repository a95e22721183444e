/**
 * EC-Agent work stays proportionate to the input: per-document, per-span and per-trace work is
 * done once per call, and what is still superlinear is capped (EC_LIMITS). Work is measured as
 * the bytes handed to SHA-256, never by a clock.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { asciiCanonical, compareCodePoints } from "../../worker/protocol/ec/canonical.js";
import { buildBundle, replayBundle, type ExecutionRow } from "../../worker/protocol/ec/bundle.js";
import { versionOf, type Corpus } from "../../worker/protocol/ec/corpus.js";
import { referenceTo } from "../../worker/protocol/ec/evidence.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { answerWithin, EC_LIMITS, EcLimitError } from "../../worker/protocol/ec/limits.js";
import { issueEcReceipt, jointDigest, verifyEcReceipt, VerifyMemo } from "../../worker/protocol/ec/receipt.js";
import { evaluateSupport, opensSentence as opensSentenceForTest } from "../../worker/protocol/ec/support.js";
import { containsText } from "../../worker/protocol/ec/text.js";

const ev = (fields: Partial<TraceEvent> & Pick<TraceEvent, "action_id" | "action_type">): TraceEvent => ({ tool: null, input: null, output: null, doc_id: null, doc_version: null, access: null, claim_id: null, attempt: null, ...fields });
const CLAIM = "Alpha beta gamma";

/** One document of `size` characters with a span over all of it, a run with `extra` tool calls before its claim. */
async function world(size: number, extra = 0) {
  const text = `${CLAIM}. ` + "x".repeat(size);
  const corpus: Corpus = { d: { text, spans: { all: { start: 0, end: Array.from(text).length }, head: { start: 0, end: CLAIM.length } } } };
  const events: TraceEvent[] = [
    ev({ action_id: "t0", action_type: "retrieval", tool: "search", input: "q", doc_id: "d", doc_version: await versionOf(text), access: "granted", output: "retrieved d" }),
    ...Array.from({ length: extra }, (_, i) => ev({ action_id: `x${i}`, action_type: "tool_call", tool: "calc", input: `${i}`, output: `result ${i}` })),
    ev({ action_id: "c", action_type: "claim_emission", claim_id: "c1", output: CLAIM }),
    ev({ action_id: "a", action_type: "answer", output: CLAIM }),
  ];
  const anchor = events.length - 2;
  const issue = async (refs: number, span = "all") => {
    const ref = await referenceTo(corpus, "d", span, { quote: false });
    return issueEcReceipt({ policy_id: "p", run_id: "run-1", claim_id: "c1", claim: CLAIM, emission_anchor: anchor, evidence: Array.from({ length: refs }, () => ref), corpus, events });
  };
  return { corpus, events, issue };
}

const ledger = { max_calls: 9, calls: 9, max_declared_tokens: 9, declared_tokens: 9, verifier_calls: 1, termination: "answered" as const };
/** A ledger for a row of `receipts` receipts: each was verified online once. */
const ledgerFor = (receipts: number) => ({ ...ledger, verifier_calls: receipts });

/** Bytes handed to SHA-256 while `work` runs. */
async function hashedBytes(work: () => Promise<unknown>): Promise<number> {
  let bytes = 0;
  const digest = crypto.subtle.digest.bind(crypto.subtle);
  const spy = vi.spyOn(crypto.subtle, "digest").mockImplementation(((algorithm: Parameters<typeof crypto.subtle.digest>[0], data: Parameters<typeof crypto.subtle.digest>[1]) => {
    bytes += data.byteLength;
    return digest(algorithm, data);
  }) as typeof crypto.subtle.digest);
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return bytes;
}

afterEach(() => vi.restoreAllMocks());

describe("EC-Agent work is done once per call", () => {
  it("a receipt citing one document many times hashes the document and the span once, not once per reference", async () => {
    const w = await world(200_000);
    const receipt = await w.issue(60);
    let v: Awaited<ReturnType<typeof verifyEcReceipt>> | undefined;
    const bytes = await hashedBytes(async () => (v = await verifyEcReceipt(receipt, w.corpus, w.events)));
    expect(v!.reasons).toEqual(["OK", "SUPPORT_LEXICAL_SUBSTRING"]);
    // The corpus digest and the version check each hash the text once, the span hash once more: never 60 times.
    expect(bytes).toBeLessThan(4 * w.corpus.d.text.length);
  });

  it("a bundle repeating one receipt over a long trace digests the trace once per run, not once per receipt", async () => {
    const w = await world(100, 2_000);
    const receipt = await w.issue(1, "head");
    const bundle = await buildBundle(w.corpus, [{ run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events: w.events, receipts: Array.from({ length: 100 }, () => receipt), budget_ledger: ledgerFor(100) }]);
    let decision = "";
    const bytes = await hashedBytes(async () => (decision = (await replayBundle(bundle)).decision));
    expect(decision).toBe("match");
    // The row digest and the trace digests read the events a few times in all; 100 receipts × the trace would be ~50× the bundle.
    expect(bytes).toBeLessThan(5 * JSON.stringify(bundle).length);
  });
});

describe("a trace's own findings are worked out once per trace", () => {
  it("a trace with 200,000 problems is verified and reported whole (a spread of its findings overflowed the stack: 500 on the unauthenticated route)", async () => {
    const w = await world(10);
    const receipt = await w.issue(1, "head");
    const junk = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, 0]));
    const events = [...w.events, { ...w.events[0], action_id: "junk", ...junk }];
    const v = await verifyEcReceipt(receipt, w.corpus, events, { memo: new VerifyMemo(w.corpus, EC_LIMITS) });
    expect(v.reasons).toEqual(["EVENT_SCHEMA_INVALID", "SUPPORT_LEXICAL_SUBSTRING"]);
    expect(v.findings).toHaveLength(200_000);
    expect(v.findings[0]).toEqual({ reason: "EVENT_SCHEMA_INVALID", detail: 'undeclared field "k0"', event: events.length - 1 });
  });

  it("the receipts of one row share their trace's findings instead of each mapping and sorting them (256 receipts × 49,000 problems of 4,096 empty events took 5.6 s a 320 kB body)", async () => {
    const w = await world(10);
    const events = [...w.events, ...Array.from({ length: 100 }, () => ({}))] as TraceEvent[];
    const memo = new VerifyMemo(w.corpus, EC_LIMITS);
    const one = await w.issue(1, "head");
    const two = { ...(await w.issue(2, "head")), joint_digest: `sha256:${"0".repeat(64)}` };
    const [a, b] = [await verifyEcReceipt(one, w.corpus, events, { memo }), await verifyEcReceipt(two, w.corpus, events, { memo })];
    expect(a.reasons).toEqual(["EVENT_SCHEMA_INVALID", "EVENT_ACTION_TYPE_INVALID", "SUPPORT_LEXICAL_SUBSTRING"]);
    expect(b.reasons).toEqual(["EVENT_SCHEMA_INVALID", "EVENT_ACTION_TYPE_INVALID", "JOINT_DIGEST_MISMATCH", "SUPPORT_LEXICAL_SUBSTRING"]);
    // In reason order: each empty event's missing fields, then each one's action type, then the receipt's own joint digest.
    const trace = [...Array(1100).fill("EVENT_SCHEMA_INVALID"), ...Array(100).fill("EVENT_ACTION_TYPE_INVALID")];
    expect(a.findings.map((f) => f.reason)).toEqual(trace);
    expect(b.findings.map((f) => f.reason)).toEqual([...trace, "JOINT_DIGEST_MISMATCH"]);
    expect(a.findings.every((f, i) => f === b.findings[i])).toBe(true);
  });
});

describe("EC_LIMITS: what is still superlinear is capped", () => {
  it("more evidence references in one receipt than the cap is refused, at the cap it verifies", async () => {
    const w = await world(100);
    const memo = () => new VerifyMemo(w.corpus, EC_LIMITS);
    const at = await w.issue(EC_LIMITS.evidence_per_receipt, "head");
    expect((await verifyEcReceipt(at, w.corpus, w.events, { memo: memo() })).valid).toBe(true);
    const over = await w.issue(EC_LIMITS.evidence_per_receipt + 1, "head");
    await expect(verifyEcReceipt(over, w.corpus, w.events, { memo: memo() })).rejects.toMatchObject({ name: "EcLimitError", limit: "evidence_per_receipt" });
    // Uncapped (the CLI, the audit) it still verifies.
    expect((await verifyEcReceipt(over, w.corpus, w.events)).valid).toBe(true);
  });

  it("more distinct cited text than the cap is refused before it is selected", async () => {
    const w = await world(EC_LIMITS.cited_code_points / 2 - 100); // one span of just under half the cap
    const receipt = await w.issue(1);
    const memo = new VerifyMemo(w.corpus, EC_LIMITS);
    expect((await verifyEcReceipt(receipt, w.corpus, w.events, { memo })).valid).toBe(true);
    // The same span again is free; spans at other offsets add up.
    expect((await verifyEcReceipt(receipt, w.corpus, w.events, { memo })).valid).toBe(true);
    const shifted = structuredClone(receipt);
    for (const s of [1, 2]) {
      shifted.evidence[0].start = s;
      if (s === 1) expect((await verifyEcReceipt(shifted, w.corpus, w.events, { memo })).valid).toBe(false);
      else await expect(verifyEcReceipt(shifted, w.corpus, w.events, { memo })).rejects.toBeInstanceOf(EcLimitError);
    }
  });

  it("a row with more receipts than the cap, or a trace with more events, is refused", async () => {
    const w = await world(100, EC_LIMITS.events_per_trace);
    const receipt = await w.issue(1, "head");
    const bundle = await buildBundle(w.corpus, [{ run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events: w.events, receipts: [receipt], budget_ledger: ledger }]);
    await expect(replayBundle(bundle, { limits: EC_LIMITS })).rejects.toMatchObject({ limit: "events_per_trace" });
    expect((await replayBundle(bundle)).decision).toBe("match");
    const small = await world(100);
    const one = await small.issue(1, "head");
    const many = await buildBundle(small.corpus, [{ run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events: small.events, receipts: Array.from({ length: EC_LIMITS.receipts_per_run + 1 }, () => one), budget_ledger: ledgerFor(EC_LIMITS.receipts_per_run + 1) }]);
    await expect(replayBundle(many, { limits: EC_LIMITS })).rejects.toMatchObject({ limit: "receipts_per_run" });
    (many.rows["run-1"] as ExecutionRow).receipts.length = EC_LIMITS.receipts_per_run;
    expect((await replayBundle(many, { limits: EC_LIMITS })).decision).toBe("manifest_invalid"); // the cap is judged on rows that hold; this one no longer matches its digest
  });

  it("more events in a bundle's rows and reruns together than the cap is refused before any row is replayed; at the cap it replays", async () => {
    // Each trace was capped, the rows were not: 150 rows of 4,096 empty events, a dozen schema problems each, took 3 s in 2 MiB.
    const w = await world(100, 4_000);
    const receipt = await w.issue(1, "head");
    const rows = (n: number, rerun = false) =>
      Array.from({ length: n }, (_, i) => ({ run_id: `run-${i + 1}`, record_id: "r", policy: "p", seed: 1, required_claims: [], events: w.events, receipts: i === 0 ? [receipt] : [], budget_ledger: ledger, ...(rerun ? { rerun: { digest: null, events: [{} as TraceEvent], timed_out: false } } : {}) }));
    const per = w.events.length;
    expect(4 * per).toBeLessThanOrEqual(EC_LIMITS.events_per_call);
    expect(5 * per).toBeGreaterThan(EC_LIMITS.events_per_call);
    const over = await buildBundle(w.corpus, rows(5));
    await expect(replayBundle(over, { limits: EC_LIMITS })).rejects.toMatchObject({ name: "EcLimitError", limit: "events_per_call" });
    expect((await replayBundle(over)).rows).toHaveLength(5); // uncapped (the CLI) it replays
    expect((await replayBundle(await buildBundle(w.corpus, rows(4)), { limits: EC_LIMITS })).decision).toBe("match");
    // A rerun's events count too.
    const limits = { ...EC_LIMITS, events_per_call: 4 * per };
    await expect(replayBundle(await buildBundle(w.corpus, rows(4, true)), { limits })).rejects.toMatchObject({ limit: "events_per_call" });
  });

  it("a corpus of more documents than the cap is refused before any is hashed, on verify and on replay; at the cap it is read", async () => {
    const w = await world(10);
    const receipt = await w.issue(1, "head");
    const padded = (n: number): Corpus => ({ ...w.corpus, ...Object.fromEntries(Array.from({ length: n - 1 }, (_, i) => [`e${i}`, { text: "" }])) });
    const over = padded(EC_LIMITS.corpus_documents + 1);
    // Through the route's own check (corpusProblem with the caps): nothing is hashed.
    const { corpusProblem } = await import("../../worker/protocol/ec/corpus.js");
    expect(await hashedBytes(() => expect(corpusProblem(over, EC_LIMITS)).rejects.toMatchObject({ limit: "corpus_documents" }))).toBe(0);
    expect(await corpusProblem(padded(EC_LIMITS.corpus_documents), EC_LIMITS)).toBeNull();
    const row = { run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events: w.events, receipts: [receipt], budget_ledger: ledger };
    await expect(replayBundle(await buildBundle(over, [row]), { limits: EC_LIMITS })).rejects.toMatchObject({ limit: "corpus_documents" });
    const full = padded(EC_LIMITS.corpus_documents);
    const fitting = await issueEcReceipt({ policy_id: "p", run_id: "run-1", claim_id: "c1", claim: CLAIM, emission_anchor: receipt.emission_anchor, evidence: receipt.evidence, corpus: full, events: w.events });
    expect((await replayBundle(await buildBundle(full, [{ ...row, receipts: [fitting] }]), { limits: EC_LIMITS })).decision).toBe("match");
  });
});

describe("a claim is looked for in a span or an answer in time linear in their lengths", () => {
  it("containsText answers as includes does, surrogate pairs and every length included", () => {
    const texts = ["", "a", "ab", "aaaa", "😀", "a😀b", "x".repeat(40), "ab".repeat(30) + "abc", "a".repeat(20) + "b" + "a".repeat(20)];
    const needles = ["", "a", "b", "\ude00", "😀", "aab", "a".repeat(17), "a".repeat(20) + "b", "a".repeat(19) + "b" + "a".repeat(19), "ab".repeat(30) + "abc", "ba".repeat(10)];
    for (const t of texts) for (const n of needles) expect({ t, n, found: containsText(t, n) }).toEqual({ t, n, found: t.includes(n) });
    for (let i = 0; i < 300; i++) {
      const random = (len: number) => Array.from({ length: len }, () => "ab😀"[Math.floor(Math.random() * 3)]).join("");
      const [t, n] = [random(60), random(18 + (i % 6))];
      expect(containsText(t, n)).toBe(t.includes(n));
      expect(containsText(t + n + t, n)).toBe(true);
    }
  });

  it("a long claim built to make includes quadratic never reaches includes, on the support route, the verifier or the anchor check", async () => {
    // includes read half this claim at every position of a run of "a": 2 s for a 1 M-character span over HTTP, 6 s for three receipts.
    const claim = "a".repeat(8000) + "b" + "a".repeat(8000);
    const span = "a".repeat(20_000);
    const includes = vi.spyOn(String.prototype, "includes");
    const longNeedles = () => includes.mock.calls.filter(([needle]) => typeof needle === "string" && needle.length > 16).length;
    const support = await evaluateSupport(claim, [span]);
    expect(support.lexical.supported).toBe(false);
    const corpus: Corpus = { d: { text: span, spans: { s: { start: 0, end: span.length } } } };
    const events = [
      ev({ action_id: "t0", action_type: "retrieval", tool: "search", input: "q", doc_id: "d", doc_version: await versionOf(span), access: "granted", output: "retrieved d" }),
      ev({ action_id: "a", action_type: "answer", output: span }),
    ];
    const ref = await referenceTo(corpus, "d", "s", { quote: false });
    const receipt = await issueEcReceipt({ policy_id: "p", run_id: "run-1", claim_id: "c1", claim, emission_anchor: 1, evidence: [ref], corpus, events });
    expect(receipt.integrity.reasons).toEqual(["ANCHOR_MISMATCH"]);
    expect((await verifyEcReceipt(receipt, corpus, events, { memo: new VerifyMemo(corpus, EC_LIMITS) })).reasons).toEqual(["ANCHOR_MISMATCH", "SUPPORT_LEXICAL_NONE"]);
    expect(longNeedles()).toBe(0);
  });
});

describe("the support guard reads a claim once, and opens sentences by their end alone", () => {
  /** The entity rule as it was: the whole prefix before each word tested against the anchored pattern (quadratic). */
  const opensByPrefix = (text: string, index: number) => {
    const before = text.slice(0, index).trimEnd();
    return before === "" || /[.!?:]["'’”)]?$/u.test(before);
  };
  it("finds the same entities as testing the whole prefix, on texts built to hit every edge", () => {
    const pieces = ["Alpha", "beta", ". ", "! ", "? ", ": ", '." ', ".’ ", ".) ", "\u00a0", "\n\n", " ", "The", "March", "1,200", "Zoë", "😀", "”", "x"];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 500; n++) {
      let text = "";
      for (let i = next() % 40; i > 0; i--) text += pieces[next() % pieces.length] + (next() % 3 ? " " : "");
      const words = [...text.matchAll(/\p{L}[\p{L}\p{Mn}\p{Nd}'’-]*/gu)];
      const expected = words.filter((m) => /^\p{Lu}/u.test(m[0]) && opensByPrefix(text, m.index!)).length;
      const found = words.filter((m) => /^\p{Lu}/u.test(m[0]) && opensSentenceForTest(text, m.index!)).length;
      expect(found, JSON.stringify(text)).toBe(expected);
    }
  });

  it("caps a support call's claim and spans (EC_LIMITS), refused before any work", async () => {
    const { evaluateSupport } = await import("../../worker/protocol/ec/support.js");
    await expect(evaluateSupport("x", Array.from({ length: EC_LIMITS.support_spans + 1 }, () => "y"), undefined, EC_LIMITS)).rejects.toBeInstanceOf(EcLimitError);
    await expect(evaluateSupport("é".repeat(EC_LIMITS.claim_code_points + 1), ["y"], undefined, EC_LIMITS)).rejects.toBeInstanceOf(EcLimitError);
    expect((await evaluateSupport("é".repeat(EC_LIMITS.claim_code_points), ["y"], undefined, EC_LIMITS)).claim_code_points).toBe(EC_LIMITS.claim_code_points);
  });
});

describe("an answer's size is capped like its work", () => {
  it("an answer restating one long span for every reference is refused by its size, before it is serialised; a small one passes", async () => {
    const w = await world(200_000);
    const memo = () => new VerifyMemo(w.corpus, EC_LIMITS);
    const many = await verifyEcReceipt(await w.issue(60), w.corpus, w.events, { memo: memo() });
    expect(many.support.evaluated).toBe(true);
    expect(() => answerWithin(many, EC_LIMITS)).toThrow(EcLimitError);
    const few = await verifyEcReceipt(await w.issue(2), w.corpus, w.events, { memo: memo() });
    expect(() => answerWithin(few, EC_LIMITS)).not.toThrow();
    // Counted as serialisation repeats it: the same array shared by 60 answers counts 60 times.
    const bytes = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).length;
    expect(bytes(many)).toBeGreaterThan(EC_LIMITS.answer_bytes);
    expect(bytes(few)).toBeLessThan(EC_LIMITS.answer_bytes);
  });

  it("counts bytes as JSON writes them: escaped control characters and multi-byte UTF-8, not code units", () => {
    const limits = { answer_bytes: 1000 };
    for (const [text, fits] of [["a".repeat(950), true], ["\u0001".repeat(200), false], ["é".repeat(400), true], ["€".repeat(400), false], ["😀".repeat(200), true], ["😀".repeat(300), false], ["\ud800".repeat(200), false], ["\ude00".repeat(200), false], ["a\ud800".repeat(100), true], ["\ude00\ud800".repeat(100), true]] as const) {
      const answer = { run: text };
      expect(new TextEncoder().encode(JSON.stringify(answer)).length <= limits.answer_bytes, text.slice(0, 3)).toBe(fits);
      if (fits) expect(() => answerWithin(answer, limits)).not.toThrow();
      else expect(() => answerWithin(answer, limits)).toThrow(EcLimitError);
    }
  });

  it("finds a claim in the answer it is anchored to once per call, and caps what those scans read", async () => {
    // A row of receipts anchored on one long answer, each with its own short claim: each receipt
    // scanned the whole answer (256 × 1.8 M characters took 2.6 s over HTTP).
    const text = "Alpha beta gamma.";
    const corpus: Corpus = { d: { text, spans: { s: { start: 0, end: 16 } } } };
    const answer = "a".repeat(300_000);
    const events = [
      ev({ action_id: "t0", action_type: "retrieval", tool: "search", input: "q", doc_id: "d", doc_version: await versionOf(text), access: "granted", output: "retrieved d" }),
      ev({ action_id: "a", action_type: "answer", output: answer }),
    ];
    const ref = await referenceTo(corpus, "d", "s", { quote: false });
    const issue = (claim: string) => issueEcReceipt({ policy_id: "p", run_id: "run-1", claim_id: "c1", claim, emission_anchor: 1, evidence: [ref], corpus, events });
    const claims = Array.from({ length: EC_LIMITS.receipts_per_run }, (_, i) => "a" + String.fromCodePoint(0x4e00 + i));
    const distinct = await Promise.all(claims.map(issue));
    expect(distinct[0].integrity.reasons).toEqual(["ANCHOR_MISMATCH"]); // not in the answer: its anchor is refused, after a full scan
    const row = (receipts: unknown[]) => [{ run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events, receipts: receipts as never[], budget_ledger: ledgerFor(receipts.length) }];
    const many = await buildBundle(corpus, row(distinct));
    await expect(replayBundle(many, { limits: EC_LIMITS })).rejects.toMatchObject({ name: "EcLimitError", limit: "answer_scan_code_units" });
    expect((await replayBundle(many)).decision).toBe("match"); // uncapped (the CLI) it replays
    // The same claim again costs nothing: a row repeating one receipt stays under the cap.
    const repeated = await buildBundle(corpus, row(Array.from({ length: EC_LIMITS.receipts_per_run }, () => distinct[0])));
    expect((await replayBundle(repeated, { limits: EC_LIMITS })).decision).toBe("match");
    const memo = new VerifyMemo(corpus, { ...EC_LIMITS, answer_scan_code_units: 2 * answer.length });
    expect(memo.answerContains(answer, "aa")).toBe(true);
    expect(memo.answerContains(answer, "aa")).toBe(true);
    expect(memo.answerContains(answer, "ab")).toBe(false);
    expect(() => memo.answerContains(answer, "ac")).toThrow(EcLimitError);
  });

  it("judges a claim against a span once per call, and caps what the scans read", async () => {
    const w = await world(1000);
    const memo = new VerifyMemo(w.corpus, { ...EC_LIMITS, support_scan_code_units: 2500 });
    const span = "x".repeat(1000);
    const first = memo.lexical("claim one", span, () => ({ tokens: new Set(["claim", "one"]), sorted: ["claim", "one"], normalised: "claim one" }));
    expect(memo.lexical("claim one", span, () => { throw new Error("prepared again"); })).toBe(first);
    memo.lexical("claim two", span, () => ({ tokens: new Set(["claim", "two"]), sorted: ["claim", "two"], normalised: "claim two" }));
    expect(() => memo.lexical("claim three", span, () => ({ tokens: new Set(["claim"]), sorted: ["claim"], normalised: "claim three" }))).toThrow(EcLimitError);
  });
});

describe("keys are ordered by code point without walking their common prefix again", () => {
  /** Code points read by the code-point walk (each is read with codePointAt) while `work` runs. */
  const codePointReads = (work: () => unknown): number => {
    let n = 0;
    const real = String.prototype.codePointAt;
    const spy = vi.spyOn(String.prototype, "codePointAt").mockImplementation(function (this: string, pos: number) {
      n++;
      return real.call(this, pos);
    });
    try {
      work();
    } finally {
      spy.mockRestore();
    }
    return n;
  };
  // The walk by code point began at the start of both strings: sorting n keys of a long shared
  // prefix that differ in an astral character after it read the prefix n log n times (an evidence
  // reference of 1,877 such 1,000-unit keys, 2 MB, took a verify call 0.5-0.65 s against 0.09 s
  // for ASCII keys).
  const prefix = "a".repeat(100_000);

  it("one comparison reads the code points around the first difference, not the prefix", () => {
    const reads = codePointReads(() => {
      expect(compareCodePoints(prefix + "\u{10000}", prefix + "\u{10001}")).toBeLessThan(0);
      expect(compareCodePoints(prefix + "\u{10400}x", prefix + "\uffff")).toBeGreaterThan(0);
    });
    expect(reads).toBeLessThan(16);
  });

  it("sorting 500 such keys reads a few code points per comparison", () => {
    const keys = Array.from({ length: 500 }, (_, i) => "b".repeat(2_000) + String.fromCodePoint(0x10000 + ((i * 7919) % 1024)) + String.fromCodePoint(0x10000 + i));
    const reads = codePointReads(() => asciiCanonical(Object.fromEntries(keys.map((k) => [k, 0]))));
    expect(reads).toBeLessThan(500 * 10 * 8);
  });

  it("orders as a walk from the start does, lone surrogates included", () => {
    const byWalk = (a: string, b: string) => {
      const [x, y] = [Array.from(a, (c) => c.codePointAt(0)!), Array.from(b, (c) => c.codePointAt(0)!)];
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
      return x.length - y.length;
    };
    const units = [0x61, 0x7a, 0xe9, 0xd7ff, 0xd800, 0xd83d, 0xdbff, 0xdc00, 0xde00, 0xdfff, 0xe000, 0xff61, 0xffff];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const word = () => String.fromCharCode(...Array.from({ length: next() % 5 }, () => units[next() % units.length]));
    for (let t = 0; t < 20_000; t++) {
      const common = word();
      const [a, b] = [common + word(), common + word()];
      expect(Math.sign(compareCodePoints(a, b)), JSON.stringify([a, b])).toBe(Math.sign(byWalk(a, b)));
    }
  });
});

describe("a value is canonicalised once where one digest or comparison needs it", () => {
  /** An object whose one property counts its reads: a canonical pass reads it twice (defined? then written). */
  const counted = () => {
    const seen = { reads: 0 };
    const value = Object.defineProperty({}, "x", { enumerable: true, get: () => (seen.reads++, "\u00e9") });
    return { seen, value };
  };

  it("the joint digest canonicalises the evidence once (a test pass before it made verify read 2 MB of evidence twice)", async () => {
    const { seen, value } = counted();
    const h = "sha256:" + "0".repeat(64);
    const digest = await jointDigest({ schema_version: "ec-agent/2", policy_id: "p", run_id: "r", corpus_digest: h, claim_id: "c", claim: "x", emission_anchor: 0, evidence: [value as never], trace_digest: h });
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(seen.reads).toBe(2);
    // Still null when only the evidence has no canonical form, and still a throw for another field's.
    expect(await jointDigest({ schema_version: "ec-agent/2", policy_id: "p", run_id: "r", corpus_digest: h, claim_id: "c", claim: "x", emission_anchor: 0, evidence: [{ n: NaN } as never], trace_digest: h })).toBeNull();
    await expect(jointDigest({ schema_version: "ec-agent/2", policy_id: "p", run_id: "r", corpus_digest: h, claim_id: "c", claim: "x", emission_anchor: NaN, evidence: [], trace_digest: h })).rejects.toThrow(/non-finite/);
  });

  it("replay canonicalises a stored support result once to compare it (twice before)", async () => {
    const w = await world(100);
    const bundle = await buildBundle(w.corpus, [{ run_id: "run-1", record_id: "r", policy: "p", seed: 1, required_claims: ["c1"], events: w.events, receipts: [await w.issue(1)], budget_ledger: ledger }]);
    const stored = (bundle.rows["run-1"] as ExecutionRow).receipts[0].support_result;
    const reason = stored.reason;
    let reads = 0;
    Object.defineProperty(stored, "reason", { enumerable: true, get: () => (reads++, reason) });
    const report = await replayBundle(bundle, { limits: EC_LIMITS });
    expect(report.decision).toBe("match");
    // The row digest's canonical pass (2 reads), the row's form (1), the comparison's pass (2; 4 before).
    expect(reads).toBe(5);
  });
});

describe("the canonical escaping is the per-character one's", () => {
  it("for every UTF-16 code unit, alone and between plain text", () => {
    const SHORT: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
    const perCharacter = (s: string) => {
      let out = '"';
      for (let i = 0; i < s.length; i++) {
        const c = s.charCodeAt(i);
        out += SHORT[s[i]] ?? (c < 0x20 || c > 0x7e ? "\\u" + c.toString(16).padStart(4, "0") : s[i]);
      }
      return out + '"';
    };
    for (let c = 0; c <= 0xffff; c++) {
      const s = "a" + String.fromCharCode(c) + "b" + String.fromCharCode(c, c);
      expect(asciiCanonical(s)).toBe(perCharacter(s));
    }
    const mixed = "Zoë 📓 \u0000\u007f\"q\" \\ \ud800 tail";
    expect(asciiCanonical(mixed)).toBe(perCharacter(mixed));
  });
});
