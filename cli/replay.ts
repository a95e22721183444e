/**
 * `npm run replay -- <bundle.json> [--out report.json]`: replays an EC-Agent receipt bundle
 * offline and writes the deterministic report (to --out, else to stdout). Exit 0 when every
 * stored result is reproduced, 1 on a replay mismatch or an invalid manifest, 2 on bad usage.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { renderReport, replayBundle } from "../worker/protocol/ec/bundle.js";
import { parseStrictJson } from "../worker/protocol/strict-json.js";

const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const out = outAt >= 0 ? args[outAt + 1] : undefined;
const file = args.find((a, i) => !a.startsWith("--") && (outAt < 0 || i !== outAt + 1));
if (!file || (outAt >= 0 && !out)) {
  console.error("usage: npm run replay -- <bundle.json> [--out report.json]");
  process.exit(2);
}
let bundle: unknown;
try {
  bundle = parseStrictJson(readFileSync(file, "utf8"));
} catch (err) {
  console.error(`cannot read ${file}: ${(err as Error).message}`);
  process.exit(2);
}
const report = await replayBundle(bundle);
const text = renderReport(report);
if (out) writeFileSync(out, text);
else process.stdout.write(text);
const mismatched = report.receipts.filter((r) => r.replay_mismatch).map((r) => r.id);
console.error(
  report.decision === "match"
    ? `replay: ${report.receipt_count} receipts reproduced exactly`
    : report.decision === "manifest_invalid"
      ? `replay: manifest invalid, no row trusted: ${report.manifest_problems.join("; ")}`
      : `replay: MISMATCH in ${mismatched.join(", ")}`,
);
process.exit(report.decision === "match" ? 0 : 1);
