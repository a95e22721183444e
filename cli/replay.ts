/**
 * `npm run replay -- <bundle.json> [--out report.json] [--expect sha256:…]`: replays an
 * EC-Agent receipt bundle offline and writes the deterministic report (to --out, else to
 * stdout). `--expect` pins the outer bundle digest. Exit 0 when every stored result is
 * reproduced, 1 on a replay mismatch or an invalid manifest, 2 on bad usage (an unreadable bundle,
 * an --out path that cannot be written: one line, nothing half-written).
 */
import { parseArgs } from "node:util";
import { renderReport, replayBundle, replaySummary } from "../worker/protocol/ec/bundle.js";
import { SHA256_REF } from "../worker/protocol/encoding.js";
import { parseStrictJson } from "../worker/protocol/strict-json.js";
import { OutputError, refuseOverwritingInput, writeOutputs } from "./output.js";
import { readUtf8 } from "./input.js";

const usage = () => {
  console.error("usage: npm run replay -- <bundle.json> [--out report.json] [--expect sha256:<64 hex>]");
  process.exit(2);
};
let args;
try {
  args = parseArgs({ args: process.argv.slice(2), options: { out: { type: "string" }, expect: { type: "string" } }, allowPositionals: true, strict: true });
} catch {
  usage();
}
const file = args!.positionals[0];
const { out, expect } = args!.values;
// "-" as --out wrote a file named "-": the report goes to stdout without --out.
if (!file || args!.positionals.length > 1 || (expect !== undefined && !SHA256_REF.test(expect)) || out === "-") usage();
try {
  if (out !== undefined) refuseOverwritingInput(out, [file]);
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
let bundle: unknown;
try {
  bundle = parseStrictJson(readUtf8(file));
} catch (err) {
  console.error(`cannot read ${file}: ${(err as Error).message}`);
  process.exit(2);
}
const report = await replayBundle(bundle, { expectedBundleDigest: expect ?? null });
const text = renderReport(report);
if (out !== undefined) {
  try {
    writeOutputs([{ path: out, text }]);
  } catch (err) {
    // An output path that cannot be written is bad usage: one line naming it, nothing half-written.
    if (!(err instanceof OutputError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
} else process.stdout.write(text);
console.error(replaySummary(report));
process.exit(report.decision === "match" ? 0 : 1);
