/**
 * The bench's report: the Markdown a run prints, and the generated blocks of docs/capacity.md and
 * docs/ec-receipts.md (between their `bench:begin` and `bench:end` markers), all rendered from one
 * results.json, so the figures in the documents are exactly the committed run's. `npm run
 * bench:doc` rewrites the blocks from bench/results.json; a unit test holds the committed
 * documents to it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const CONNECTIONS = 16;
const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
export const CAPACITY_DOC = resolve(ROOT, "docs/capacity.md");
export const RESULTS = resolve(ROOT, "bench/results.json");
const BEGIN = "<!-- bench:begin (generated from bench/results.json by `npm run bench:doc`; do not edit) -->";
const END = "<!-- bench:end -->";

export const renderPaperTable = (rows: { what: string; ours_ms: number; paper_ms: number }[]) =>
  ["| EC-Agent, as the paper's timing table | ours ms (workerd, best) | paper ms |", "|---|---:|---:|", ...rows.map((r) => `| ${r.what} | ${r.ours_ms} | ${r.paper_ms} |`)].join("\n");

/** Machine, versions and how the run was served, in one line. */
const provenance = (r: any) =>
  `Run of ${r.generated_at} (${r.mode}; ${r.machine.cores} × ${r.machine.cpu}, ${r.machine.memory_gib} GiB, ${r.machine.kernel}; Node ${r.versions.node}, wrangler ${r.versions.wrangler}, workerd ${r.versions.workerd}; served by ${r.server ?? "wrangler dev"}; ${r.duration_s} s).`;

export function renderMarkdown(r: any): string {
  const lines = [
    `## countersign bench (${r.mode}, ${r.machine.cores} × ${r.machine.cpu}, ${r.versions.node}, workerd ${r.versions.workerd})`,
    "",
    provenance(r),
    "",
    ...(r.cpu_rounds ? [`In-isolate figures: ${r.cpu_rounds} rounds, each timing n iterations of every case and a call of none; best = (fastest n-iteration call − fastest empty call) / n, median = the median round's difference / n.`, ""] : []),
    "| per verification, inside workerd | µs/op (best) | µs/op (median round) |",
    "|---|---:|---:|",
    ...Object.entries(r.cpu_us_per_op).map(([k, v]) => `| ${k} | ${v} | ${r.cpu_us_per_op_median[k]} |`),
    "",
    "| stage (of the route, then of one full verification, then its native floor, then one SHA-256 of 120 and of 1,300 bytes: WebCrypto against @noble/hashes) | µs/op (best) | µs/op (median round) |",
    "|---|---:|---:|",
    ...Object.entries(r.stages_us_per_op).map(([k, v]) => `| ${String(k).replace("stage:", "")} | ${v} | ${r.stages_us_per_op_median?.[k] ?? "—"} |`),
    "",
    `| HTTP (${CONNECTIONS} connections, medians over rounds) | rounds | requests | req/s | p50 ms | p99 ms | errors | accepted |`,
    "|---|---:|---:|---:|---:|---:|---:|---:|",
    ...r.http_summary.map((h: any) => `| ${h.label} | ${h.rounds} | ${h.requests} | ${h.median_rps} | ${h.median_p50_ms} | ${h.median_p99_ms} | ${h.errors} | ${h.accepted} |`),
    "",
    `Ledger of ${r.ledger_purge.issuer}: ${r.ledger_purge.short_lived} receipts living 5 s and ${r.ledger_purge.long_lived} living 300 s accepted; ` +
      `${r.ledger_purge.rows_after_load} nonce rows after the load, ${r.ledger_purge.rows_after_purge} after the purge alarm.`,
    "",
    `Claim writes: ${r.claim_writes.claims} claims wrote ${r.claim_writes.rows_written} rows (${r.claim_writes.rows_written_per_claim} a claim, index entries included); ${r.claim_writes.bytes_per_claim} bytes a claim in the database.`,
    "",
    `Storage: the ledger of ${r.storage_per_nonce.ledger} holds ${r.storage_per_nonce.rows} nonces in ${r.storage_per_nonce.database_bytes} bytes: ${r.storage_per_nonce.bytes_per_nonce} bytes a nonce, all overhead included.`,
    "",
    "| ratio | value |",
    "|---|---:|",
    ...Object.entries(r.ratios).map(([k, v]) => `| ${k} | ${v} |`),
    "",
    `Chains and bundles: ${r.chains_and_bundles}.`,
    "",
    renderPaperTable(r.ec_agent_paper_table),
  ];
  return lines.join("\n");
}


/** `doc` with the text between its generated block markers replaced by `block`. */
function withBlock(doc: string, block: string, name: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${name} lacks the generated block markers`);
  return doc.slice(0, begin + BEGIN.length) + "\n\n" + block + "\n\n" + doc.slice(end);
}

/** The capacity document with its generated block replaced by the figures of `results`. */
export function capacityWithFigures(doc: string, results: unknown): string {
  return withBlock(doc, renderMarkdown(results).replace(/^## /m, "### "), "docs/capacity.md");
}

export const EC_DOC = resolve(ROOT, "docs/ec-receipts.md");

/** The EC-Agent document's timing block: the paper's table and the whole fixture's replay, from the same run. */
export function ecTimingWithFigures(doc: string, results: any): string {
  const block = [
    `From the committed run (${results.generated_at}, ${results.mode}; ${results.machine.cores} × ${results.machine.cpu}, Node ${results.versions.node}, workerd ${results.versions.workerd}); "best" as docs/capacity.md defines it.`,
    "",
    renderPaperTable(results.ec_agent_paper_table),
    "",
    `Replaying the whole fixture bundle (vectors/ec-agent/bundle.json) costs ${Math.round(results.cpu_us_per_op["bundle-replay"]) / 1000} ms.`,
  ].join("\n");
  return withBlock(doc, block, "docs/ec-receipts.md");
}

export function writeCapacityFigures(results: unknown): void {
  writeFileSync(CAPACITY_DOC, capacityWithFigures(readFileSync(CAPACITY_DOC, "utf8"), results));
  writeFileSync(EC_DOC, ecTimingWithFigures(readFileSync(EC_DOC, "utf8"), results));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeCapacityFigures(JSON.parse(readFileSync(RESULTS, "utf8")));
}
