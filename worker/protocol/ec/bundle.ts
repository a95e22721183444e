/**
 * Receipt bundles and their replay. A bundle is oracle-free: a corpus row and one row per
 * policy execution (run id, record id, policy, seed, required claims, events, each receipt with
 * the verifier and support results recorded online, the budget ledger, and an optional
 * execution rerun). The manifest binds every row by digest and the outer bundle digest binds
 * the manifest. Replay validates all of that before any row is trusted, then recomputes every
 * commitment and result; a stored result that differs from the recomputed one is a mismatch,
 * even when the recomputed one is valid, and every mismatch names its reason. The report is
 * deterministic: same bundle, same bytes.
 */
import { SHA256_REF } from "../encoding.js";
import { asciiCanonical, compareCodePoints, DOMAINS, domainDigest } from "./canonical.js";
import { corpusDigest, corpusProblem, type Corpus } from "./corpus.js";
import { requiredClaimCoverage, TERMINATIONS, type Coverage, type Termination } from "./coverage.js";
import { EC_SCHEMA_VERSION, EVENT_FIELDS, OBSERVING_TYPES, traceDigest, traceProblems, type TraceEvent } from "./events.js";
import { EcLimitError, type EcLimits } from "./limits.js";
import { integrityReasons, verifyEcReceipt, VerifyMemo, type EcReceipt, type EcVerification, type IntegrityReason } from "./receipt.js";
import { DEFAULT_SUPPORT_CONFIG, supportConfigDigest } from "./support.js";

export const BUNDLE_VERSION = "ec-bundle/2";
export const REPORT_VERSION = "ec-replay/2";
/** The verifier implementation a bundle records; another value at replay is a drift cause. */
export const VERIFIER_VERSION = "countersign-ec-verifier/2";

export interface SupportRecord {
  evaluated: boolean;
  supported: boolean | null;
  reason: string;
  config_digest: string;
}

export interface ReceiptRecord {
  receipt: EcReceipt;
  verifier_result: { valid: boolean; reasons: string[] };
  support_result: SupportRecord;
}

export interface BudgetLedger {
  max_calls: number;
  calls: number;
  max_declared_tokens: number;
  declared_tokens: number;
  verifier_calls: number;
  termination: Termination;
}

/** One policy execution, persisted. */
export interface ExecutionRow {
  run_id: string;
  record_id: string;
  policy: string;
  seed: number;
  required_claims: string[];
  events: TraceEvent[];
  receipts: ReceiptRecord[];
  budget_ledger: BudgetLedger;
  /** A separate execution rerun under the frozen runtime contract: its trace and digest, or null when none was run. */
  rerun: { digest: string | null; events: TraceEvent[] | null; timed_out: boolean } | null;
}

export interface ManifestRow {
  id: string;
  kind: "corpus" | "execution";
  sha256: string;
}

export interface Manifest {
  schema_version: string;
  verifier_version: string;
  support_config_digest: string;
  corpus_digest: string;
  rows: ManifestRow[];
}

export interface Bundle {
  bundle_version: string;
  manifest: Manifest;
  /** The outer digest: over the manifest, which binds every row by its digest. */
  bundle_digest: string;
  rows: Record<string, unknown>;
}

/** Why a bundle cannot be replayed: each problem has one of these codes. */
export const MANIFEST_CODES = [
  "BUNDLE_MALFORMED",
  "MANIFEST_MALFORMED",
  "BUNDLE_DIGEST_MISMATCH",
  "BUNDLE_DIGEST_NOT_EXPECTED",
  "ROW_DUPLICATE",
  "ROW_MISSING",
  "ROW_UNLISTED",
  "ROW_DIGEST_MISMATCH",
  "ROW_MALFORMED",
  "BUDGET_LEDGER_INCONSISTENT",
  "CORPUS_MALFORMED",
  "CORPUS_IDENTITY_MISMATCH",
] as const;
export type ManifestCode = (typeof MANIFEST_CODES)[number];
export interface ManifestProblem {
  code: ManifestCode;
  detail: string;
}

/** Why a replayed row or receipt does not reproduce what was stored. */
export const MISMATCH_REASONS = ["SCHEMA", "SOURCE", "HASH", "QUOTE", "TRACE_DIGEST", "VERIFIER_DRIFT", "POLICY_DIVERGENCE", "ENVIRONMENT_DRIFT", "TOOL_NONDETERMINISM", "TIMEOUT"] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];

export interface ReceiptReplay {
  claim_id: string | null;
  expected: { execution_digest: string | null; joint_digest: string | null; integrity: unknown; verifier_result: unknown; support_result: unknown };
  actual: { corpus_digest: string; execution_digest: string | null; joint_digest: string | null; integrity: { valid: boolean; reasons: string[] }; support_result: SupportRecord };
  replay_mismatch: boolean;
  mismatch_reasons: MismatchReason[];
}

/** A replayed execution: the paper's normalised output row. */
export interface RowReplay {
  run_id: string;
  record_id: string;
  policy: string;
  seed: number;
  events: { count: number; trace_digest: string | null };
  receipts: ReceiptReplay[];
  budget_ledger: BudgetLedger;
  bundle_digest: string;
  replay_result: { decision: "match" | "mismatch"; mismatch_reasons: MismatchReason[] };
  rerun_digest: string | null;
  rerun_result: { compared: boolean; match: boolean | null; first_divergence: { index: number; field: string } | null; reason: MismatchReason | null };
}

export interface ReplayReport {
  report_version: string;
  schema_version: string;
  verifier_version: string;
  input_digests: { bundle: string | null; expected_bundle: string | null; rows: Record<string, string> };
  receipt_count: number;
  verifier_calls: number;
  decision: "match" | "mismatch" | "manifest_invalid";
  manifest_problems: ManifestProblem[];
  rows: RowReplay[];
  coverage: Coverage | null;
}

export const rowDigest = (data: unknown): Promise<string> => domainDigest(DOMAINS.row, data);
export const outerDigest = (manifest: unknown): Promise<string> => domainDigest(DOMAINS.bundle, manifest);

/**
 * Sets an own, enumerable property whatever its name: a plain assignment to `__proto__` sets the
 * object's prototype instead (or, for a string, does nothing), so a row named `__proto__` was
 * left out of the report's row digests, and of a bundle built with it.
 */
const setOwn = <T>(target: Record<string, T>, key: string, value: T): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const exactKeys = (v: Record<string, unknown>, keys: string[]) => Object.keys(v).length === keys.length && keys.every((k) => Object.hasOwn(v, k));
const isInt = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/** Why an execution row is not of its form, or null. Names the field, never reads a string as a list. */
function executionProblem(id: string, v: unknown): string | null {
  const at = `row ${id}`;
  if (!isObject(v)) return `${at} must be an execution object`;
  const fields = ["run_id", "record_id", "policy", "seed", "required_claims", "events", "receipts", "budget_ledger", "rerun"];
  for (const k of Object.keys(v)) if (!fields.includes(k)) return `${at} has unknown field ${JSON.stringify(k)}`;
  for (const k of fields) if (!Object.hasOwn(v, k)) return `${at} is missing ${k}`;
  if (v.run_id !== id) return `${at}: run_id must be the row id`;
  for (const k of ["record_id", "policy"]) if (typeof v[k] !== "string" || v[k] === "") return `${at}: ${k} must be a non-empty string`;
  if (!isInt(v.seed)) return `${at}: seed must be a non-negative integer`;
  const rc = v.required_claims;
  if (!Array.isArray(rc) || !rc.every((c) => typeof c === "string" && c !== "")) return `${at}: required_claims must be an array of claim ids (got ${typeof rc === "string" ? "a string" : JSON.stringify(rc) ?? typeof rc})`;
  if (new Set(rc).size !== rc.length) return `${at}: required_claims lists a claim twice`;
  if (!Array.isArray(v.events)) return `${at}: events must be an array`;
  if (!Array.isArray(v.receipts)) return `${at}: receipts must be an array`;
  for (const [i, r] of v.receipts.entries()) {
    if (!isObject(r) || !exactKeys(r, ["receipt", "verifier_result", "support_result"])) return `${at}: receipts[${i}] must be {receipt, verifier_result, support_result}`;
    const vr = r.verifier_result;
    if (!isObject(vr) || !exactKeys(vr, ["valid", "reasons"]) || typeof vr.valid !== "boolean" || !Array.isArray(vr.reasons) || !vr.reasons.every((x) => typeof x === "string")) {
      return `${at}: receipts[${i}].verifier_result must be {valid: boolean, reasons: string[]}`;
    }
    const sr = r.support_result;
    if (!isObject(sr) || !exactKeys(sr, ["evaluated", "supported", "reason", "config_digest"]) || typeof sr.evaluated !== "boolean" || !(sr.supported === null || typeof sr.supported === "boolean") || typeof sr.reason !== "string" || typeof sr.config_digest !== "string") {
      return `${at}: receipts[${i}].support_result must be {evaluated, supported, reason, config_digest}`;
    }
  }
  const b = v.budget_ledger;
  const ledgerFields = ["max_calls", "calls", "max_declared_tokens", "declared_tokens", "verifier_calls", "termination"];
  if (!isObject(b) || !exactKeys(b, ledgerFields) || !ledgerFields.slice(0, 5).every((k) => isInt(b[k])) || !TERMINATIONS.includes(b.termination as Termination)) {
    return `${at}: budget_ledger must be {max_calls, calls, max_declared_tokens, declared_tokens, verifier_calls: non-negative integers, termination: ${TERMINATIONS.join(" | ")}}`;
  }
  const rr = v.rerun;
  if (rr !== null && (!isObject(rr) || !exactKeys(rr, ["digest", "events", "timed_out"]) || typeof rr.timed_out !== "boolean" || !(rr.digest === null || (typeof rr.digest === "string" && SHA256_REF.test(rr.digest))) || !(rr.events === null || Array.isArray(rr.events)))) {
    return `${at}: rerun must be null or {digest, events, timed_out}`;
  }
  return null;
}

/**
 * How a row's budget ledger contradicts itself or its row, one sentence per broken rule (the row
 * already of its form). Replay cannot recount calls or declared tokens (the paper's protocol-level
 * accounting units, not derivable from the events), but the fields must agree with one another:
 * a count over its budget means the budget was exhausted, and every persisted receipt had its
 * online verifier call.
 */
function ledgerProblems(id: string, row: ExecutionRow): string[] {
  const b = row.budget_ledger;
  const at = `row ${id}: budget_ledger`;
  const counts = `calls ${b.calls} of max_calls ${b.max_calls}, declared_tokens ${b.declared_tokens} of max_declared_tokens ${b.max_declared_tokens}`;
  const problems: string[] = [];
  const over = b.calls > b.max_calls || b.declared_tokens > b.max_declared_tokens;
  if (over && b.termination !== "budget_exhausted") problems.push(`${at} is over its budget (${counts}) yet its termination is ${b.termination}, not budget_exhausted`);
  // budget_exhausted under both maxima is consistent: a runner stops when the next call, or its
  // declared tokens, would not fit, before either count reaches its maximum.
  if (b.verifier_calls < row.receipts.length) problems.push(`${at}.verifier_calls ${b.verifier_calls} is fewer than the row's ${row.receipts.length} receipts, each verified online`);
  return problems;
}

/** Validates the whole bundle before any row is trusted. */
async function manifestProblems(bundle: unknown, expected: string | null, limits: EcLimits | null): Promise<{ problems: ManifestProblem[]; rows: Record<string, string>; outer: string | null }> {
  const rows: Record<string, string> = {};
  const problems: ManifestProblem[] = [];
  const add = (code: ManifestCode, detail: string) => problems.push({ code, detail });
  const done = (outer: string | null = null) => ({ problems, rows, outer });
  if (!isObject(bundle)) return add("BUNDLE_MALFORMED", "bundle must be an object"), done();
  for (const k of Object.keys(bundle)) if (!["bundle_version", "manifest", "bundle_digest", "rows"].includes(k)) add("BUNDLE_MALFORMED", `bundle has unknown field ${JSON.stringify(k)}`);
  if (bundle.bundle_version !== BUNDLE_VERSION) add("BUNDLE_MALFORMED", `bundle_version must be ${JSON.stringify(BUNDLE_VERSION)}`);
  const m = bundle.manifest;
  if (!isObject(m)) return add("MANIFEST_MALFORMED", "manifest must be an object"), done();
  const manifestFields = ["schema_version", "verifier_version", "support_config_digest", "corpus_digest", "rows"];
  for (const k of Object.keys(m)) if (!manifestFields.includes(k)) add("MANIFEST_MALFORMED", `manifest has unknown field ${JSON.stringify(k)} (requirements belong to each execution row)`);
  if (m.schema_version !== EC_SCHEMA_VERSION) add("MANIFEST_MALFORMED", `manifest.schema_version must be ${JSON.stringify(EC_SCHEMA_VERSION)}`);
  if (typeof m.verifier_version !== "string") add("MANIFEST_MALFORMED", "manifest.verifier_version must be a string");
  for (const k of ["support_config_digest", "corpus_digest"]) if (typeof m[k] !== "string" || !SHA256_REF.test(m[k] as string)) add("MANIFEST_MALFORMED", `manifest.${k} must be "sha256:" + 64 lowercase hex`);
  if (!Array.isArray(m.rows)) return add("MANIFEST_MALFORMED", "manifest.rows must be an array of {id, kind, sha256}"), done();
  let outer: string | null = null;
  try {
    outer = await outerDigest(m);
  } catch {
    add("MANIFEST_MALFORMED", "the manifest has no canonical form (a non-finite number?)");
  }
  if (outer !== null && bundle.bundle_digest !== outer) add("BUNDLE_DIGEST_MISMATCH", `the bundle's outer digest ${JSON.stringify(bundle.bundle_digest ?? null)} is not the recomputed ${outer}`);
  if (outer !== null && expected !== null && outer !== expected) add("BUNDLE_DIGEST_NOT_EXPECTED", `the recomputed outer digest ${outer} is not the pinned ${expected}`);
  const data = bundle.rows;
  if (!isObject(data)) return add("BUNDLE_MALFORMED", "rows must be an object by row id"), done(outer);
  const listed = new Set<string>();
  // A row listed twice is named ROW_DUPLICATE; its digest and form are worked out once, not per listing.
  const digested = new Map<string, string | null>();
  const formed = new Map<string, ManifestProblem[]>();
  let corpusId: string | null = null;
  for (const row of m.rows as unknown[]) {
    if (!isObject(row) || !exactKeys(row, ["id", "kind", "sha256"]) || typeof row.id !== "string" || !["corpus", "execution"].includes(row.kind as string) || typeof row.sha256 !== "string") {
      add("MANIFEST_MALFORMED", "every manifest row is {id, kind: corpus | execution, sha256}");
      continue;
    }
    if (listed.has(row.id)) add("ROW_DUPLICATE", `row ${row.id} is listed twice`);
    listed.add(row.id);
    if (row.kind === "corpus") corpusId = corpusId === null ? row.id : (add("MANIFEST_MALFORMED", "the manifest lists more than one corpus row"), corpusId);
    if (!Object.hasOwn(data, row.id)) {
      add("ROW_MISSING", `row ${row.id} is listed but absent`);
      continue;
    }
    if (!digested.has(row.id)) digested.set(row.id, await rowDigest(data[row.id]).catch(() => null));
    const digest = digested.get(row.id)!;
    if (digest === null) {
      add("ROW_MALFORMED", `row ${row.id} has no canonical form (a non-finite number?)`);
      continue;
    }
    setOwn(rows, row.id, digest);
    if (digest !== row.sha256) add("ROW_DIGEST_MISMATCH", `row ${row.id}: digest ${digest} is not the manifest's ${row.sha256}`);
    if (row.kind === "execution") {
      if (!formed.has(row.id)) {
        const problem = executionProblem(row.id, data[row.id]);
        const found: ManifestProblem[] = problem
          ? [{ code: "ROW_MALFORMED", detail: problem }]
          : ledgerProblems(row.id, data[row.id] as ExecutionRow).map((detail) => ({ code: "BUDGET_LEDGER_INCONSISTENT", detail }));
        formed.set(row.id, found);
      }
      problems.push(...formed.get(row.id)!);
    }
  }
  for (const id of Object.keys(data)) if (!listed.has(id)) add("ROW_UNLISTED", `row ${id} is present but not in the manifest`);
  if (corpusId === null) add("MANIFEST_MALFORMED", "the manifest must list exactly one corpus row");
  else if (Object.hasOwn(data, corpusId)) {
    const problem = await corpusProblem(data[corpusId], limits);
    if (problem) add("CORPUS_MALFORMED", problem);
    else if (typeof m.corpus_digest === "string" && (await corpusDigest(data[corpusId] as Corpus)) !== m.corpus_digest) add("CORPUS_IDENTITY_MISMATCH", "manifest.corpus_digest is not the corpus row's digest");
  }
  return done(outer);
}

/** The paper's reason for a receipt whose recomputed integrity failed, by the first failing check. */
function reasonFor(code: IntegrityReason): MismatchReason {
  if (code === "QUOTE_MISMATCH") return "QUOTE";
  if (code === "SPAN_HASH_MISMATCH") return "HASH";
  if (["SCHEMA_INVALID", "EVIDENCE_EMPTY", "EVENT_SCHEMA_INVALID", "EVENT_ACTION_TYPE_INVALID", "EVENT_DUPLICATE_ACTION_ID", "EVENT_NO_ANSWER"].includes(code)) return "SCHEMA";
  if (["EXECUTION_DIGEST_MISMATCH", "ANCHOR_MISMATCH", "JOINT_DIGEST_MISMATCH"].includes(code)) return "TRACE_DIGEST";
  return "SOURCE";
}

const canonicalOrNull = (v: unknown): string | null => {
  try {
    return asciiCanonical(v);
  } catch {
    return null;
  }
};
const same = (a: unknown, b: unknown) => {
  const ca = canonicalOrNull(a);
  return ca !== null && ca === canonicalOrNull(b);
};

/** The support result as a bundle records it. */
export const supportRecord = (v: EcVerification, configDigest: string): SupportRecord => ({ evaluated: v.support.evaluated, supported: v.support.supported, reason: v.reasons.at(-1)!, config_digest: configDigest });

/** Where a rerun's trace first departs from the persisted one, and whose doing that is. */
function rerunDivergence(events: TraceEvent[], rerun: TraceEvent[]): { index: number; field: string; reason: MismatchReason } | null {
  for (let i = 0; i < Math.max(events.length, rerun.length); i++) {
    const [a, b] = [events[i], rerun[i]];
    if (!a || !b) return { index: i, field: "length", reason: "POLICY_DIVERGENCE" };
    const field = EVENT_FIELDS.find((k) => a[k] !== b[k]);
    if (!field) continue;
    // What a tool or source returned differs while the policy did the same thing: the tool is nondeterministic.
    const toolSide = ["output", "doc_version", "access"].includes(field) && [...OBSERVING_TYPES, "empty_observation", "tool_error", "tool_call"].includes(a.action_type) && a.action_type === b.action_type;
    return { index: i, field, reason: toolSide ? "TOOL_NONDETERMINISM" : "POLICY_DIVERGENCE" };
  }
  return null;
}

/**
 * Replays a bundle. Pure; the CLI writes the report with `renderReport`. `expected` pins the
 * outer digest the caller trusts (a fixture manifest, a published value).
 */
export async function replayBundle(bundle: unknown, options: { expectedBundleDigest?: string | null; limits?: EcLimits | null } = {}): Promise<ReplayReport> {
  const expected = options.expectedBundleDigest ?? null;
  const { problems, rows, outer } = await manifestProblems(bundle, expected, options.limits ?? null);
  const configDigest = await supportConfigDigest(DEFAULT_SUPPORT_CONFIG);
  const report = (decision: ReplayReport["decision"], replayed: RowReplay[], coverage: Coverage | null): ReplayReport => ({
    report_version: REPORT_VERSION,
    schema_version: EC_SCHEMA_VERSION,
    verifier_version: VERIFIER_VERSION,
    input_digests: { bundle: outer, expected_bundle: expected, rows },
    receipt_count: replayed.reduce((n, r) => n + r.receipts.length, 0),
    verifier_calls: replayed.reduce((n, r) => n + r.receipts.length, 0),
    decision,
    manifest_problems: problems,
    rows: replayed,
    coverage,
  });
  if (problems.length > 0) return report("manifest_invalid", [], null);

  const b = bundle as Bundle;
  const corpus = b.rows[b.manifest.rows.find((r) => r.kind === "corpus")!.id] as Corpus;
  // Per-document, per-span and per-trace work is shared by every receipt of the bundle.
  const memo = new VerifyMemo(corpus, options.limits ?? null);
  const known = { corpusDigest: b.manifest.corpus_digest, memo };
  // Another verifier version or support configuration made the bundle: its recorded results are
  // not this verifier's to reproduce, whatever the recomputation gives, so every row names the cause.
  const drifted = b.manifest.verifier_version !== VERIFIER_VERSION;
  const environmentDrift = b.manifest.support_config_digest !== configDigest;
  const replayed: RowReplay[] = [];
  const coverageRuns = [];
  const executions = b.manifest.rows.filter((r) => r.kind === "execution");
  if (options.limits) {
    let events = 0;
    for (const mr of executions) {
      const row = b.rows[mr.id] as ExecutionRow;
      events += row.events.length + (row.rerun?.events?.length ?? 0);
    }
    if (events > options.limits.events_per_call) {
      throw new EcLimitError("events_per_call", `the bundle's rows and reruns hold ${events} events; at most ${options.limits.events_per_call} are replayed in one call`);
    }
  }
  for (const mr of executions) {
    const row = b.rows[mr.id] as ExecutionRow;
    if (options.limits && row.receipts.length > options.limits.receipts_per_run) {
      throw new EcLimitError("receipts_per_run", `row ${row.run_id} has ${row.receipts.length} receipts; at most ${options.limits.receipts_per_run} are replayed per execution`);
    }
    if (options.limits && row.rerun?.events && row.rerun.events.length > options.limits.events_per_trace) {
      throw new EcLimitError("events_per_trace", `row ${row.run_id}'s rerun has ${row.rerun.events.length} events; at most ${options.limits.events_per_trace} are compared in one call`);
    }
    // A trace of its form that holds no answer event is not a committed execution either (a
    // missing answer is an explicit answer event with empty output): with no receipt to report
    // EVENT_NO_ANSWER, the row would otherwise reproduce as a match.
    const prepared = memo.trace(row.events);
    const eventsOk = prepared.findings.length === 0 && prepared.answer >= 0;
    const receipts: ReceiptReplay[] = [];
    for (const rec of row.receipts) {
      const stored = rec.receipt as Partial<EcReceipt> | null;
      const check = await verifyEcReceipt(stored, corpus, row.events, known);
      const integrity = { valid: check.valid, reasons: integrityReasons(check) };
      const support = supportRecord(check, configDigest);
      const reasons = new Set<MismatchReason>();
      const storedIntegrity = isObject(stored) ? stored.integrity : undefined;
      const integrityDiffers = !same(storedIntegrity, integrity) || !same(rec.verifier_result, integrity);
      if (integrityDiffers) {
        // The persisted objects fail a check now: name it. They pass, yet another verdict was stored: the verifier drifted.
        // (The first integrity reason is the first finding's; findings themselves are not read, see verifyEcReceipt.)
        const first = integrity.reasons.find((x): x is IntegrityReason => x !== "OK");
        reasons.add(first ? reasonFor(first) : "VERIFIER_DRIFT");
        if (drifted) reasons.add("VERIFIER_DRIFT");
      }
      // Support follows from verified text: compared only when integrity itself reproduced.
      if (!integrityDiffers && !same(rec.support_result, support)) reasons.add(environmentDrift || rec.support_result.config_digest !== configDigest ? "ENVIRONMENT_DRIFT" : "VERIFIER_DRIFT");
      if (isObject(stored) && stored.policy_id !== row.policy) reasons.add("POLICY_DIVERGENCE");
      if (isObject(stored) && stored.run_id !== row.run_id) reasons.add("SCHEMA");
      receipts.push({
        claim_id: isObject(stored) && typeof stored.claim_id === "string" ? stored.claim_id : null,
        expected: { execution_digest: stored?.execution_digest ?? null, joint_digest: stored?.joint_digest ?? null, integrity: storedIntegrity ?? null, verifier_result: rec.verifier_result, support_result: rec.support_result },
        actual: { corpus_digest: check.recomputed.corpus_digest, execution_digest: check.recomputed.execution_digest, joint_digest: check.recomputed.joint_digest, integrity, support_result: support },
        replay_mismatch: reasons.size > 0,
        mismatch_reasons: sortReasons(reasons),
      });
    }
    const fullTrace = eventsOk ? await traceDigest(row.events) : null;
    const rerun = await compareRerun(row, fullTrace);
    const rowReasons = new Set<MismatchReason>(receipts.flatMap((r) => r.mismatch_reasons));
    // A trace not of its form is the row's own problem, also when no receipt of the row reports it.
    if (!eventsOk) rowReasons.add("SCHEMA");
    if (rerun.reason) rowReasons.add(rerun.reason);
    if (drifted) rowReasons.add("VERIFIER_DRIFT");
    if (environmentDrift) rowReasons.add("ENVIRONMENT_DRIFT");
    replayed.push({
      run_id: row.run_id,
      record_id: row.record_id,
      policy: row.policy,
      seed: row.seed,
      events: { count: row.events.length, trace_digest: fullTrace },
      receipts,
      budget_ledger: row.budget_ledger,
      bundle_digest: outer!,
      replay_result: { decision: rowReasons.size ? "mismatch" : "match", mismatch_reasons: sortReasons(rowReasons) },
      rerun_digest: row.rerun?.digest ?? null,
      rerun_result: rerun,
    });
    coverageRuns.push({
      run_id: row.run_id,
      required_claims: row.required_claims,
      termination: row.budget_ledger.termination,
      // A receipt covers a claim of its own run only: one issued for another run or under another
      // policy than its row's (a swapped or reassigned receipt, a replay mismatch itself) verifies
      // against the row's events when they are alike, yet this run never issued it.
      receipts: receipts.flatMap((r, i) => {
        const stored = row.receipts[i].receipt as EcReceipt;
        return r.claim_id && stored.run_id === row.run_id && stored.policy_id === row.policy ? [{ claim_id: r.claim_id, valid: r.actual.integrity.valid, supported: r.actual.support_result.supported, evidence: stored.evidence }] : [];
      }),
    });
  }
  const mismatch = drifted || environmentDrift || replayed.some((r) => r.replay_result.decision === "mismatch");
  return report(mismatch ? "mismatch" : "match", replayed, requiredClaimCoverage(coverageRuns));
}

const sortReasons = (s: Set<MismatchReason>) => MISMATCH_REASONS.filter((r) => s.has(r));

async function compareRerun(row: ExecutionRow, persisted: string | null): Promise<RowReplay["rerun_result"]> {
  if (row.rerun === null) return { compared: false, match: null, first_divergence: null, reason: null };
  if (row.rerun.timed_out) return { compared: true, match: false, first_divergence: null, reason: "TIMEOUT" };
  const rerunEvents = row.rerun.events;
  if (!rerunEvents || traceProblems(rerunEvents).length > 0 || persisted === null || row.rerun.digest !== (await traceDigest(rerunEvents))) {
    return { compared: true, match: false, first_divergence: null, reason: "SCHEMA" };
  }
  if (row.rerun.digest === persisted) return { compared: true, match: true, first_divergence: null, reason: null };
  const d = rerunDivergence(row.events, rerunEvents);
  return { compared: true, match: false, first_divergence: d && { index: d.index, field: d.field }, reason: d?.reason ?? "POLICY_DIVERGENCE" };
}

const sortKeys = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(sortKeys) : v !== null && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort(compareCodePoints).map((k) => [k, sortKeys((v as Record<string, unknown>)[k])])) : v;

/** The report's bytes: keys sorted, two-space indent, no clock in it, so two replays of one bundle are byte-identical. */
export const renderReport = (report: ReplayReport): string => JSON.stringify(sortKeys(report), null, 2) + "\n";

/** An execution before its receipts are verified and stored: the row's fields, with bare receipts and an optional rerun. */
export type ExecutionInput = Omit<ExecutionRow, "receipts" | "rerun"> & { receipts: EcReceipt[]; rerun?: ExecutionRow["rerun"] };

/**
 * Builds a bundle (issuing side, fixtures, the audit): runs the online verifier and the
 * support evaluator on every receipt to record their results, then computes every row digest,
 * the manifest and the outer digest.
 */
export async function buildBundle(corpusIn: Corpus, executions: ExecutionInput[]): Promise<Bundle> {
  // A bundle owns its rows: nothing the caller holds is aliased into it.
  const [corpus, runs] = JSON.parse(JSON.stringify([corpusIn, executions])) as [Corpus, ExecutionInput[]];
  const configDigest = await supportConfigDigest(DEFAULT_SUPPORT_CONFIG);
  const cd = await corpusDigest(corpus);
  const rows: Record<string, unknown> = { corpus };
  const manifestRows: ManifestRow[] = [{ id: "corpus", kind: "corpus", sha256: await rowDigest(corpus) }];
  for (const run of runs) {
    const receipts: ReceiptRecord[] = [];
    for (const receipt of run.receipts) {
      const check = await verifyEcReceipt(receipt, corpus, run.events, { corpusDigest: cd });
      receipts.push({ receipt, verifier_result: { valid: check.valid, reasons: integrityReasons(check) }, support_result: supportRecord(check, configDigest) });
    }
    const row: ExecutionRow = { run_id: run.run_id, record_id: run.record_id, policy: run.policy, seed: run.seed, required_claims: run.required_claims, events: run.events, receipts, budget_ledger: run.budget_ledger, rerun: run.rerun ?? null };
    setOwn(rows, run.run_id, row);
    manifestRows.push({ id: run.run_id, kind: "execution", sha256: await rowDigest(row) });
  }
  const manifest: Manifest = { schema_version: EC_SCHEMA_VERSION, verifier_version: VERIFIER_VERSION, support_config_digest: configDigest, corpus_digest: cd, rows: manifestRows };
  return { bundle_version: BUNDLE_VERSION, manifest, bundle_digest: await outerDigest(manifest), rows };
}

/** Recomputes a bundle's row digests, manifest and outer digest after an edit (tests, the audit). */
export async function resealBundle(bundle: Bundle): Promise<Bundle> {
  const rowsOut: ManifestRow[] = [];
  for (const r of bundle.manifest.rows) rowsOut.push({ ...r, sha256: await rowDigest(bundle.rows[r.id]) });
  const manifest = { ...bundle.manifest, rows: rowsOut };
  return { ...bundle, manifest, bundle_digest: await outerDigest(manifest) };
}

/** One line for a person: what the replay decided and, when it did not match, why. */
export function replaySummary(report: ReplayReport): string {
  if (report.decision === "match") return `replay: ${report.receipt_count} receipts in ${report.rows.length} executions reproduced exactly (bundle ${report.input_digests.bundle})`;
  if (report.decision === "manifest_invalid") return `replay: manifest invalid, no row trusted: ${report.manifest_problems.map((p) => `${p.code}: ${p.detail}`).join("; ")}`;
  const rows = report.rows.filter((r) => r.replay_result.decision === "mismatch");
  return `replay: MISMATCH in ${rows.map((r) => `${r.run_id} (${r.replay_result.mismatch_reasons.join(", ")})`).join("; ")}`;
}
