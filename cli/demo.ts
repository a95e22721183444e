/**
 * `npm run demo`: signs a fresh receipt with the demo issuer key and writes the body of a
 * verification call to demo-request.json (or the path given), ready for curl.
 */
import { toHex } from "../worker/protocol/encoding.js";
import { signReceipt, unsignedReceipt } from "../worker/protocol/issue.js";
import { DEMO_AUDIENCE, DEMO_ISSUER, demoSeed } from "./demo-identity.js";
import { OutputError, writeOutputs } from "./output.js";

const out = process.argv[2] ?? "demo-request.json";
const random = (n: number) => toHex(crypto.getRandomValues(new Uint8Array(n)));
const now = Math.floor(Date.now() / 1000);
const request = {
  agent_id: "agent://demo/planner",
  tool: "weather.lookup",
  params: { city: "Lisbon", units: "metric" },
  timestamp: now,
  trace_id: random(8),
};
const receipt = signReceipt(
  await unsignedReceipt({
    request,
    issuer: DEMO_ISSUER,
    audience: DEMO_AUDIENCE,
    verdict: "allow",
    issued_at: now,
    lifetime: 120,
    nonce: random(16),
    sequence: Date.now(),
    max_clock_skew: 5,
    rule_summary: "SEC-001=allow|policy-floor=allow",
    config_hash: "sha256:" + "0".repeat(64),
    legacy_receipt: random(16),
  }),
  demoSeed(),
);
try {
  writeOutputs([{ path: out, text: JSON.stringify({ receipt, audience: DEMO_AUDIENCE, request }, null, 2) + "\n" }]);
} catch (err) {
  // A path that cannot be written is bad usage, as for the other commands: one line, exit 2.
  if (!(err instanceof OutputError)) throw err;
  console.error(err.message);
  process.exit(2);
}
console.log(`wrote ${out}: a receipt valid for 120 s. Verify it (a second call is a replay):`);
// The instance as the README's tour names it (COUNTERSIGN_URL, which the CLI reads too), else PORT,
// else the default port; -S says a refused connection, which -s alone left as no output at all.
console.log(`  curl -sS -w '\\n' "\${COUNTERSIGN_URL:-http://127.0.0.1:\${PORT:-8787}}/v1/receipts/verify" -H "authorization: Bearer $DEMO_RP_TOKEN" -H 'content-type: application/json' --data @${out}`);
console.log("  (DEMO_RP_TOKEN is in .dev.vars; read it with: export $(grep DEMO_RP_TOKEN .dev.vars))");
