import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import bundle from "../../vectors/ec-agent/bundle.json" with { type: "json" };
import pin from "../../vectors/ec-agent/fixture-manifest.json" with { type: "json" };
import { buildBundle, resealBundle, type Bundle } from "../../worker/protocol/ec/bundle.js";
import { EC_LIMITS } from "../../worker/protocol/ec/limits.js";
import { issueEcReceipt } from "../../worker/protocol/ec/receipt.js";
import { harness } from "../support/app-harness.js";

const h = () => harness(env, createExecutionContext());
const post = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const rows = bundle.rows as Record<string, any>;

describe("EC-Agent routes in workerd", () => {
  it("POST /v1/ec/receipts/verify accepts a scenario receipt and names what a mutation breaks", async () => {
    const body = { receipt: rows["run-003"].receipts[2].receipt, corpus: rows.corpus, events: rows["run-003"].events };
    const ok = await h().call("/v1/ec/receipts/verify", post(body));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ valid: true, reasons: ["OK", "SUPPORT_LEXICAL_OVERLAP"] });
    const moved = await h().call("/v1/ec/receipts/verify", post({ ...body, receipt: { ...body.receipt, run_id: "run-004" } }));
    expect(moved.body).toMatchObject({ valid: false, reasons: ["JOINT_DIGEST_MISMATCH", "SUPPORT_LEXICAL_OVERLAP"] });
  });

  it("an invented span is INVALID_REFERENCE, and a forged quote leaves support unevaluated", async () => {
    const receipt = structuredClone(rows["run-003"].receipts[2].receipt);
    receipt.evidence[0].span_id = "s9";
    const invented = await h().call("/v1/ec/receipts/verify", post({ receipt, corpus: rows.corpus, events: rows["run-003"].events }));
    expect(invented.body.reasons).toEqual(["INVALID_REFERENCE", "JOINT_DIGEST_MISMATCH", "SUPPORT_LEXICAL_OVERLAP"]);
    receipt.evidence[0].span_id = "s2";
    receipt.evidence[0].quote = receipt.claim;
    const forged = await h().call("/v1/ec/receipts/verify", post({ receipt, corpus: rows.corpus, events: rows["run-003"].events }));
    expect(forged.body).toMatchObject({ valid: false, reasons: ["QUOTE_MISMATCH", "JOINT_DIGEST_MISMATCH", "SUPPORT_NOT_EVALUATED"], support: { evaluated: false } });
  });

  it("refuses a malformed corpus or an unknown field with 400 MALFORMED_REQUEST", async () => {
    for (const body of [{ receipt: {}, corpus: { d: { text: 1 } }, events: [] }, { receipt: {}, corpus: {}, events: [], extra: 1 }, { receipt: {}, events: [] }, { receipt: {}, corpus: { d: { text: "abc", version: "v3" } }, events: [] }]) {
      const res = await h().call("/v1/ec/receipts/verify", post(body));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("POST /v1/bundles/replay reproduces the fixture under its pin and refuses a tampered row before trusting it", async () => {
    const ok = await h().call("/v1/bundles/replay", post({ bundle, expected_bundle_digest: pin.bundle_digest }));
    expect(ok.body).toMatchObject({ decision: "match", receipt_count: 17, input_digests: { bundle: pin.bundle_digest } });
    const tampered = structuredClone(bundle) as any;
    tampered.rows["run-001"].events[0].output = "edited";
    const bad = await h().call("/v1/bundles/replay", post({ bundle: tampered }));
    expect(bad.body).toMatchObject({ decision: "manifest_invalid", receipt_count: 0, manifest_problems: [{ code: "ROW_DIGEST_MISMATCH" }] });
    expect((await h().call("/v1/bundles/replay", post({ bundle, expected_bundle_digest: "sha256:nope" }))).status).toBe(400);
  });

  it("a manifest problem quoting the bundle (an unknown field's 50,000-character name) is cut as an error's detail is, not echoed whole", async () => {
    // Review rv-98: each such name came back whole in manifest_problems[].detail (a 50 kB name, a 50 kB report).
    const name = "k".repeat(50_000);
    for (const odd of [{ ...bundle, [name]: 1 }, { ...bundle, manifest: { ...bundle.manifest, [name]: 1 } }]) {
      const res = await h().call("/v1/bundles/replay", post({ bundle: odd }));
      expect(res.status, res.text).toBe(200);
      expect(res.body.decision).toBe("manifest_invalid");
      const [problem] = res.body.manifest_problems;
      expect(problem.code).toMatch(/^(BUNDLE|MANIFEST)_MALFORMED$/);
      expect(problem.detail).toMatch(/^(bundle|manifest) has unknown field "kkk.*… \(\d+ more characters\)$/);
      expect(problem.detail.length).toBeLessThan(1100);
      expect(res.text.length).toBeLessThan(10_000);
    }
  });

  it("POST /v1/ec/receipts/verify cuts a finding's detail quoting the call (an unknown field's or a span id's 50,000 characters) as an error's detail is", async () => {
    // Review rv-103: rv-98 cut the replay route's manifest problems, but the verify route's findings
    // quoted an unknown field's name (receipt, evidence reference, event) or an invented span id whole.
    const long = "k".repeat(50_000);
    const base = { receipt: rows["run-003"].receipts[2].receipt, corpus: rows.corpus, events: rows["run-003"].events };
    const odd = (edit: (b: any) => void) => {
      const b = structuredClone(base) as any;
      edit(b);
      return b;
    };
    const cases: [string, any][] = [
      ["SCHEMA_INVALID", odd((b) => (b.receipt[long] = 1))],
      ["SCHEMA_INVALID", odd((b) => (b.receipt.evidence[0][long] = 1))],
      ["EVENT_SCHEMA_INVALID", odd((b) => (b.events[0][long] = 1))],
      ["INVALID_REFERENCE", odd((b) => (b.receipt.evidence[0].span_id = long))],
    ];
    for (const [reason, body] of cases) {
      const res = await h().call("/v1/ec/receipts/verify", post(body));
      expect(res.status, res.text).toBe(200);
      expect(res.body.valid).toBe(false);
      const finding = res.body.findings.find((f: { reason: string }) => f.reason === reason);
      expect(finding, JSON.stringify(res.body.reasons)).toBeDefined();
      expect(finding.detail).toMatch(/kkk… \(\d+ more characters\)/);
      for (const f of res.body.findings) expect(f.detail.length).toBeLessThan(1100);
      expect(res.text.length).toBeLessThan(10_000);
    }
  });

  it("a receipt anchored on the answer cannot claim other text under the id of a claim the run emitted at its own event, nor cover that claim", async () => {
    // Review rv-93: run-001 emits c2 ("Margarethe Vogel chaired …") at its own claim_emission event. A
    // receipt named c2 but claiming c1's sentence, anchored on the answer (claim_id null), citing
    // c1's evidence, verified valid, and replay reported c2 covered (coverage 1) though no receipt proves c2.
    const row = structuredClone(rows["run-001"]);
    const answer = row.events.findIndex((e: { action_type: string }) => e.action_type === "answer");
    const c1 = row.receipts[0].receipt;
    const emittedC2 = row.events.findIndex((e: { claim_id: string | null }) => e.claim_id === "c2");
    expect(emittedC2).toBeGreaterThanOrEqual(0);
    expect(emittedC2).toBeLessThan(answer);
    const borrowed = await issueEcReceipt({ policy_id: row.policy, run_id: row.run_id, claim_id: "c2", claim: c1.claim, emission_anchor: answer, evidence: c1.evidence, corpus: rows.corpus, events: row.events });
    const verified = await h().call("/v1/ec/receipts/verify", post({ receipt: borrowed, corpus: rows.corpus, events: row.events }));
    expect(verified.status).toBe(200);
    expect(verified.body.valid).toBe(false);
    expect(verified.body.reasons).toContain("ANCHOR_MISMATCH");
    const receipts = [...row.receipts.map((r: { receipt: unknown }) => r.receipt).filter((r: { claim_id: string }) => r.claim_id !== "c2"), borrowed];
    const built = await buildBundle(rows.corpus, [{ run_id: row.run_id, record_id: row.record_id, policy: row.policy, seed: row.seed, required_claims: row.required_claims, events: row.events, receipts, budget_ledger: row.budget_ledger }]);
    const replayed = await h().call("/v1/bundles/replay", post({ bundle: built }));
    expect(replayed.status).toBe(200);
    expect(replayed.body.coverage).toMatchObject({ covered: 3, required: 4, uncovered: [{ run_id: "run-001", claim_id: "c2", reason: "integrity_invalid" }] });
    // Under c2's id the answer may still anchor c2's own emitted text; a final-only receipt (run-005) still verifies.
    const c2 = row.receipts[1].receipt;
    const sameText = await issueEcReceipt({ policy_id: row.policy, run_id: row.run_id, claim_id: "c2", claim: c2.claim, emission_anchor: answer, evidence: c2.evidence, corpus: rows.corpus, events: row.events });
    expect((await h().call("/v1/ec/receipts/verify", post({ receipt: sameText, corpus: rows.corpus, events: row.events }))).body.valid).toBe(true);
    const own = await h().call("/v1/ec/receipts/verify", post({ receipt: row.receipts[1].receipt, corpus: rows.corpus, events: row.events }));
    expect(own.body.valid).toBe(true);
    const finalOnly = await h().call("/v1/ec/receipts/verify", post({ receipt: rows["run-005"].receipts[0].receipt, corpus: rows.corpus, events: rows["run-005"].events }));
    expect(finalOnly.body.valid).toBe(true);
  });

  it("a malformed manifest (runs: 5) or row (required_claims: \"c1c2\") is a named problem with a code, never a 5xx", async () => {
    const runs5 = structuredClone(bundle) as any;
    runs5.manifest.runs = 5;
    const a = await h().call("/v1/bundles/replay", post({ bundle: runs5 }));
    expect(a.status).toBe(200);
    expect(a.body.manifest_problems.map((p: { code: string }) => p.code)).toContain("MANIFEST_MALFORMED");
    const c1c2 = structuredClone(bundle) as any;
    c1c2.rows["run-001"].required_claims = "c1c2";
    const b = await h().call("/v1/bundles/replay", post({ bundle: c1c2 }));
    expect(b.status).toBe(200);
    expect(b.body.manifest_problems).toContainEqual({ code: "ROW_MALFORMED", detail: "row run-001: required_claims must be an array of claim ids (got a string)" });
  });

  it("a resealed bundle whose budget ledger contradicts itself is manifest_invalid with BUDGET_LEDGER_INCONSISTENT, not a match", async () => {
    // run-001 without its c2 receipt, its ledger saying 99 calls of 1, no verifier call and a timeout though it answered.
    const edited = structuredClone(bundle) as unknown as Bundle;
    const row = edited.rows["run-001"] as any;
    row.receipts = row.receipts.filter((r: { receipt: { claim_id: string } }) => r.receipt.claim_id !== "c2");
    row.budget_ledger = { ...row.budget_ledger, calls: 99, max_calls: 1, verifier_calls: 0, termination: "timeout" };
    const res = await h().call("/v1/bundles/replay", post({ bundle: await resealBundle(edited) }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ decision: "manifest_invalid", receipt_count: 0, rows: [], coverage: null });
    expect(res.body.manifest_problems).toEqual([
      { code: "BUDGET_LEDGER_INCONSISTENT", detail: "row run-001: budget_ledger is over its budget (calls 99 of max_calls 1, declared_tokens 35 of max_declared_tokens 256) yet its termination is timeout, not budget_exhausted" },
      { code: "BUDGET_LEDGER_INCONSISTENT", detail: "row run-001: budget_ledger.verifier_calls 0 is fewer than the row's 3 receipts, each verified online" },
    ]);
    // The same edit with a consistent ledger (timed out within budget, each receipt verified) replays.
    row.budget_ledger = { ...row.budget_ledger, calls: 1, verifier_calls: 3 };
    expect((await h().call("/v1/bundles/replay", post({ bundle: await resealBundle(edited) }))).body.decision).toBe("match");
  });

  it("a call over an EC_LIMITS cap is refused with 400 EC_LIMIT_EXCEEDED, never worked through", async () => {
    const receipt = structuredClone(rows["run-003"].receipts[2].receipt);
    receipt.evidence = Array.from({ length: EC_LIMITS.evidence_per_receipt + 1 }, () => receipt.evidence[0]);
    const refs = await h().call("/v1/ec/receipts/verify", post({ receipt, corpus: rows.corpus, events: rows["run-003"].events }));
    expect(refs.status).toBe(400);
    expect(refs.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^evidence_per_receipt: /) });
    const many = structuredClone(bundle) as unknown as Bundle;
    const row = many.rows["run-001"] as { receipts: unknown[]; budget_ledger: { verifier_calls: number } };
    row.receipts = Array.from({ length: EC_LIMITS.receipts_per_run + 1 }, () => row.receipts[0]);
    row.budget_ledger.verifier_calls = row.receipts.length;
    const replay = await h().call("/v1/bundles/replay", post({ bundle: await resealBundle(many) }));
    expect(replay.status).toBe(400);
    expect(replay.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^receipts_per_run: /) });
    // A claim, in a receipt or on the support route, and the spans one support call judges.
    const long = "Zoë kept a blue notebook. ".repeat(Math.ceil((EC_LIMITS.claim_code_points + 1) / 26));
    const claimed = await h().call("/v1/ec/receipts/verify", post({ receipt: { ...structuredClone(rows["run-003"].receipts[2].receipt), claim: long }, corpus: rows.corpus, events: rows["run-003"].events }));
    expect(claimed.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^claim_code_points: /) });
    const support = await h().call("/v1/support/evaluate", post({ claim: long, spans: ["y"] }));
    expect(support.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^claim_code_points: /) });
    const spans = await h().call("/v1/support/evaluate", post({ claim: "x", spans: Array.from({ length: EC_LIMITS.support_spans + 1 }, () => "y") }));
    expect(spans.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^support_spans: /) });
    expect((await h().call("/v1/support/evaluate", post({ claim: "x", spans: Array.from({ length: EC_LIMITS.support_spans }, () => "y") }))).status).toBe(200);
    // Over the cap and ill-typed: refused by the cap, before the schema notes a problem per element (was a 500: the stack overflowed).
    const zeros = await h().call("/v1/support/evaluate", post({ claim: "x", spans: new Array(300_000).fill(0) }));
    expect(zeros.status).toBe(400);
    expect(zeros.body.error).toMatchObject({ code: "EC_LIMIT_EXCEEDED", detail: expect.stringMatching(/^support_spans: 300000 spans/) });
    // A schema problem naming every unknown key is restated only in part (150,000 keys: a 1.8 MB detail before).
    const keys = Object.fromEntries(Array.from({ length: 150_000 }, (_, i) => [`k${i}`, 0]));
    const unknown = await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], ...keys }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe("MALFORMED_REQUEST");
    expect(unknown.body.error.detail).toMatch(/^Unrecognized keys: "k0", "k1", .*… \(\d+ more characters\)$/);
    expect(unknown.body.error.detail.length).toBeLessThan(400);
    // Any error's detail is restated in part: a duplicate key of 100,000 characters was quoted whole.
    const longKey = "k".repeat(100_000);
    const duplicate = await h().call("/v1/support/evaluate", { method: "POST", headers: { "content-type": "application/json" }, body: `{"${longKey}":1,"${longKey}":2}` });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.error.detail).toMatch(/^duplicate_key: duplicate key "kkk+… \(\d+ more characters\)$/);
    expect(duplicate.body.error.detail.length).toBeLessThan(1100);
  });

  it("POST /v1/support/evaluate returns both predicates with their fields and the configuration digest", async () => {
    const span = "The greenhouse closed for repairs in 1987 and opened again two years later.";
    const res = await h().call("/v1/support/evaluate", post({ claim: "The greenhouse opened for repairs in 1987.", spans: [span] }));
    expect(res.status).toBe(200);
    expect(res.body.lexical.supported).toBe(true);
    expect(res.body.guard).toMatchObject({ passed: false, spans: [{ reasons: ["GUARD_CONFLICT"], conflicts: [["opened", "closed"]] }] });
    const other = await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config: { threshold: 0.75 } }));
    expect(other.body.config_digest).not.toBe(res.body.config_digest);
    // Pair members named like object properties are words like any other, never a 500.
    for (const member of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const named = await h().call("/v1/support/evaluate", post({ claim: `the ${member} failed`, spans: ["y"], config: { pairs: [[member, "xy"]] } }));
      expect(named.status).toBe(200);
      expect(named.body.guard.passed).toBe(false);
    }
    for (const config of [{ threshold: 0 }, { threshold: 2 }, { pairs: [["a"]] }, { extra: 1 }]) {
      expect((await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config }))).status).toBe(400);
    }
    expect((await h().call("/v1/support/evaluate", post({ claim: "x", spans: [] }))).status).toBe(400);
  });

  it("POST /v1/support/evaluate matches a configured pair case-folded, and refuses a member that is no single token instead of never matching it", async () => {
    const named = await h().call("/v1/support/evaluate", post({ claim: "The Red gate was shut.", spans: ["The Blue gate was shut."], config: { pairs: [["Red", "BLUE"]] } }));
    expect(named.status).toBe(200);
    expect(named.body.config.pairs).toEqual([["red", "blue"]]);
    expect(named.body.guard.spans[0]).toMatchObject({ reasons: ["GUARD_MISSING_ATOM", "GUARD_CONFLICT"], conflicts: [["red", "blue"]] });
    const folded = await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config: { pairs: [["red", "blue"]] } }));
    expect(folded.body.config_digest).toBe(named.body.config_digest);
    for (const member of ["x", "left behind", "co-op", "é"]) {
      const res = await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config: { pairs: [["red", member]] } }));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "MALFORMED_REQUEST", detail: expect.stringMatching(/^config\.pairs\[0\]: /) });
    }
  });
});
