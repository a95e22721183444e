/**
 * Receipt bundles and their replay: the outer manifest is validated (every row's digest) before
 * any row is trusted; then every receipt is re-verified from its corpus and events, and a
 * stored integrity result that differs from the recomputed one is a replay mismatch, even when
 * the recomputed result is valid. The report is deterministic: same bundle, same bytes.
 */
import { asciiCanonical, domainDigest } from "./canonical.js";
import { corpusDigest, corpusProblem, type Corpus } from "./corpus.js";
import { requiredClaimCoverage, type Coverage } from "./coverage.js";
import { EC_SCHEMA_VERSION } from "./events.js";
import { verifyEcReceipt, type EcReceipt } from "./receipt.js";

export const BUNDLE_VERSION = "ec-bundle/1";
export const REPORT_VERSION = "ec-replay/1";
export const ROW_DOMAIN = "countersign.ec-agent.row.v1";

export interface ManifestRow {
  id: string;
  kind: "corpus" | "events" | "receipt";
  run_id?: string;
  sha256: string;
}

export interface Bundle {
  bundle_version: string;
  manifest: { schema_version: string; rows: ManifestRow[]; runs?: { run_id: string; required_claims: string[] }[] };
  rows: Record<string, unknown>;
}

export interface ReceiptReplay {
  id: string;
  run_id: string;
  claim_id: string | null;
  expected: { execution_digest: string | null; joint_digest: string | null; integrity: { valid: boolean; reasons: string[] } | null };
  actual: { corpus_digest: string; execution_digest: string | null; joint_digest: string | null; integrity: { valid: boolean; reasons: string[] } };
  replay_mismatch: boolean;
}

export interface ReplayReport {
  report_version: string;
  schema_version: string;
  input_digests: { bundle: string; rows: Record<string, string> };
  receipt_count: number;
  decision: "match" | "mismatch" | "manifest_invalid";
  manifest_problems: string[];
  receipts: ReceiptReplay[];
  coverage: Coverage | null;
}

const isRunRequirement = (r: unknown): boolean =>
  r !== null && typeof r === "object" && typeof (r as { run_id?: unknown }).run_id === "string" &&
  Array.isArray((r as { required_claims?: unknown }).required_claims) && (r as { required_claims: unknown[] }).required_claims.every((c) => typeof c === "string");

export const rowDigest = (data: unknown): Promise<string> => domainDigest(ROW_DOMAIN, data);

async function manifestProblems(bundle: unknown): Promise<{ problems: string[]; rows: Record<string, string> }> {
  const rows: Record<string, string> = {};
  if (bundle === null || typeof bundle !== "object" || Array.isArray(bundle)) return { problems: ["bundle must be an object"], rows };
  const b = bundle as Record<string, unknown>;
  const problems: string[] = [];
  if (b.bundle_version !== BUNDLE_VERSION) problems.push(`bundle_version must be ${JSON.stringify(BUNDLE_VERSION)}`);
  const m = b.manifest as Bundle["manifest"] | undefined;
  if (!m || typeof m !== "object" || !Array.isArray(m.rows)) return { problems: [...problems, "manifest.rows must be an array"], rows };
  if (m.schema_version !== EC_SCHEMA_VERSION) problems.push(`manifest.schema_version must be ${JSON.stringify(EC_SCHEMA_VERSION)}`);
  if (m.runs !== undefined && !(Array.isArray(m.runs) && m.runs.every(isRunRequirement))) {
    problems.push("manifest.runs, when present, is an array of {run_id, required_claims: [claim ids]}");
  }
  const data = b.rows as Record<string, unknown> | undefined;
  if (!data || typeof data !== "object" || Array.isArray(data)) return { problems: [...problems, "rows must be an object by row id"], rows };
  const listed = new Set<string>();
  for (const row of m.rows) {
    if (!row || typeof row.id !== "string" || !["corpus", "events", "receipt"].includes(row.kind) || typeof row.sha256 !== "string") {
      problems.push("every manifest row is {id, kind: corpus|events|receipt, run_id?, sha256}");
      continue;
    }
    if (listed.has(row.id)) problems.push(`row ${row.id} is listed twice`);
    listed.add(row.id);
    if (row.kind !== "corpus" && typeof row.run_id !== "string") problems.push(`row ${row.id} needs its run_id`);
    if (!Object.hasOwn(data, row.id)) {
      problems.push(`row ${row.id} is listed but absent`);
      continue;
    }
    let digest: string;
    try {
      digest = await rowDigest(data[row.id]);
    } catch {
      problems.push(`row ${row.id} has no canonical form (a non-integer number?)`);
      continue;
    }
    rows[row.id] = digest;
    if (digest !== row.sha256) problems.push(`row ${row.id}: digest ${digest} is not the manifest's ${row.sha256}`);
  }
  for (const id of Object.keys(data)) if (!listed.has(id)) problems.push(`row ${id} is present but not in the manifest`);
  const corpora = m.rows.filter((r) => r?.kind === "corpus");
  if (corpora.length !== 1) problems.push("the manifest must list exactly one corpus row");
  else {
    const problem = corpusProblem(data[corpora[0].id]);
    if (problem) problems.push(problem);
  }
  for (const r of m.rows.filter((x) => x?.kind === "receipt")) {
    if (!m.rows.some((x) => x?.kind === "events" && x.run_id === r.run_id)) problems.push(`receipt row ${r.id} has no events row for run ${r.run_id}`);
  }
  return { problems, rows };
}

/** Replays a bundle. Pure; the CLI writes the report with `renderReport`. */
export async function replayBundle(bundle: unknown): Promise<ReplayReport> {
  let bundleDigest: string;
  try {
    bundleDigest = await rowDigest(bundle);
  } catch {
    bundleDigest = "unhashable";
  }
  const { problems, rows } = await manifestProblems(bundle);
  const report = (decision: ReplayReport["decision"], receipts: ReceiptReplay[], coverage: Coverage | null): ReplayReport => ({
    report_version: REPORT_VERSION,
    schema_version: EC_SCHEMA_VERSION,
    input_digests: { bundle: bundleDigest, rows },
    receipt_count: receipts.length,
    decision,
    manifest_problems: problems,
    receipts,
    coverage,
  });
  if (problems.length > 0) return report("manifest_invalid", [], null);

  const b = bundle as Bundle;
  const corpus = b.rows[b.manifest.rows.find((r) => r.kind === "corpus")!.id] as Corpus;
  const eventsOf = (runId: string) => b.rows[b.manifest.rows.find((r) => r.kind === "events" && r.run_id === runId)!.id];
  const replays: ReceiptReplay[] = [];
  const known = { corpusDigest: await corpusDigest(corpus) };
  for (const row of b.manifest.rows.filter((r) => r.kind === "receipt")) {
    const stored = b.rows[row.id] as Partial<EcReceipt>;
    const check = await verifyEcReceipt(stored, corpus, eventsOf(row.run_id!), known);
    const actualIntegrity = { valid: check.valid, reasons: check.reasons.filter((x) => !x.startsWith("SUPPORT_")) };
    const expectedIntegrity = stored?.integrity && typeof stored.integrity === "object" ? stored.integrity : null;
    replays.push({
      id: row.id,
      run_id: row.run_id!,
      claim_id: typeof stored?.claim_id === "string" ? stored.claim_id : null,
      expected: { execution_digest: stored?.execution_digest ?? null, joint_digest: stored?.joint_digest ?? null, integrity: expectedIntegrity },
      actual: { corpus_digest: check.recomputed.corpus_digest, execution_digest: check.recomputed.execution_digest, joint_digest: check.recomputed.joint_digest, integrity: actualIntegrity },
      replay_mismatch: asciiCanonicalOrNull(expectedIntegrity) !== asciiCanonical(actualIntegrity),
    });
  }
  const coverage = b.manifest.runs
    ? requiredClaimCoverage(
        b.manifest.runs.map((run) => ({
          run_id: run.run_id,
          required_claims: run.required_claims,
          receipts: replays.filter((r) => r.run_id === run.run_id && r.claim_id).map((r) => ({ claim_id: r.claim_id!, valid: r.actual.integrity.valid, evidence: (b.rows[r.id] as EcReceipt).evidence ?? [] })),
        })),
      )
    : null;
  return report(replays.some((r) => r.replay_mismatch) ? "mismatch" : "match", replays, coverage);
}

const asciiCanonicalOrNull = (v: unknown): string | null => {
  try {
    return asciiCanonical(v);
  } catch {
    return null;
  }
};

const sortKeys = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(sortKeys) : v !== null && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])])) : v;

/** The report's bytes: keys sorted, two-space indent, no clock in it, so two replays of one bundle are byte-identical. */
export const renderReport = (report: ReplayReport): string => JSON.stringify(sortKeys(report), null, 2) + "\n";

/** Builds a bundle, computing every row digest (issuing side, fixtures, the audit). */
export async function buildBundle(corpusIn: Corpus, runsIn: { run_id: string; events: unknown[]; receipts: { id: string; receipt: EcReceipt }[]; required_claims?: string[] }[]): Promise<Bundle> {
  // A bundle owns its rows: nothing the caller holds is aliased into it.
  const [corpus, runs] = JSON.parse(JSON.stringify([corpusIn, runsIn])) as [Corpus, typeof runsIn];
  const rows: Record<string, unknown> = { corpus };
  const manifestRows: ManifestRow[] = [{ id: "corpus", kind: "corpus", sha256: await rowDigest(corpus) }];
  for (const run of runs) {
    const eventsId = `${run.run_id}/events`;
    rows[eventsId] = run.events;
    manifestRows.push({ id: eventsId, kind: "events", run_id: run.run_id, sha256: await rowDigest(run.events) });
    for (const { id, receipt } of run.receipts) {
      rows[id] = receipt;
      manifestRows.push({ id, kind: "receipt", run_id: run.run_id, sha256: await rowDigest(receipt) });
    }
  }
  const withRequired = runs.filter((r) => r.required_claims);
  return {
    bundle_version: BUNDLE_VERSION,
    manifest: { schema_version: EC_SCHEMA_VERSION, rows: manifestRows, ...(withRequired.length ? { runs: withRequired.map((r) => ({ run_id: r.run_id, required_claims: r.required_claims! })) } : {}) },
    rows,
  };
}
