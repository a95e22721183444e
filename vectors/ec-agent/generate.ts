/**
 * Writes the EC-Agent fixtures derived from scenario.ts: bundle.json (the replay fixture,
 * `npm run replay -- vectors/ec-agent/bundle.json`), trace-vector.json (countersign's two-event
 * trace digest vector) and fixture-manifest.json (what the fixture pins: the outer bundle digest,
 * the expected counts and the trace vector's digest). `npm run vectors:generate` rewrites them;
 * a test checks that a fresh generation is byte-identical.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { BUNDLE_VERSION, VERIFIER_VERSION } from "../../worker/protocol/ec/bundle.js";
import { asciiCanonical, DOMAINS } from "../../worker/protocol/ec/canonical.js";
import { EC_SCHEMA_VERSION, indexedEvents, traceDigest, type TraceEvent } from "../../worker/protocol/ec/events.js";
import { toHex, utf8 } from "../../worker/protocol/encoding.js";
import { buildRuns, scenarioBundle } from "./build.js";

export const TWO_EVENTS: TraceEvent[] = [
  {
    action_id: "a1", action_type: "retrieval", tool: "search", input: "café opening hours", output: "retrieved market", doc_id: "market",
    doc_version: "sha256:0f1d0ab4a2de7b8c5cf3bdf9cb4e7d3c1a6f3e8b9c2d4e5f60718293a4b5c6d7", access: "granted", claim_id: null, attempt: 1,
  },
  { action_id: "a2", action_type: "answer", tool: null, input: null, output: "Opens at seven ☕ — closes at noon 📓", doc_id: null, doc_version: null, access: null, claim_id: null, attempt: null },
];

/** The paper's published values, which this vector does not reproduce (see docs/ec-receipts.md). */
export const PAPER_VALUES = {
  trace_vector_prefix: "977cef81",
  trace_vector_suffix: "3e8c746",
  guard_config_digest: "ee54723b94044a7da0a87d488f791863bc4aa92401778503b6238c9c49c54dbc",
};

export async function traceVector() {
  const canonical = asciiCanonical({ domain: DOMAINS.trace, events: indexedEvents(TWO_EVENTS), schema_version: EC_SCHEMA_VERSION });
  return {
    description: "countersign's trace digest = SHA-256(domain separator ‖ canonical {domain, events, schema_version}); the separator is the ASCII bytes of `domain` followed by one line feed. Our separator and schema version, not the paper's.",
    domain: DOMAINS.trace,
    domain_separator_hex: toHex(utf8(DOMAINS.trace + "\n")),
    schema_version: EC_SCHEMA_VERSION,
    events: TWO_EVENTS,
    canonical,
    digest: await traceDigest(TWO_EVENTS),
    paper: {
      ...PAPER_VALUES,
      reproduced: false,
      why: "the paper's domain separator and two-event fixture are published only in its supplementary material, which we do not have",
    },
  };
}

export async function ecFixtures(): Promise<{ path: string; text: string }[]> {
  const here = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));
  const built = await buildRuns();
  const bundle = await scenarioBundle(built);
  const vector = await traceVector();
  const manifest = {
    description: "What the replay fixture pins: `npm run replay -- vectors/ec-agent/bundle.json --expect <bundle_digest>` must answer match with these counts.",
    bundle: "bundle.json",
    bundle_version: BUNDLE_VERSION,
    schema_version: EC_SCHEMA_VERSION,
    verifier_version: VERIFIER_VERSION,
    bundle_digest: bundle.bundle_digest,
    corpus_digest: bundle.manifest.corpus_digest,
    support_config_digest: bundle.manifest.support_config_digest,
    executions: built.length,
    receipt_count: built.reduce((n, r) => n + r.receipts.length, 0),
    verifier_calls: built.reduce((n, r) => n + r.receipts.length, 0),
    rows: Object.fromEntries(bundle.manifest.rows.map((r) => [r.id, r.sha256])),
    trace_vector_digest: vector.digest,
  };
  return [
    { path: here("bundle.json"), text: JSON.stringify(bundle, null, 2) + "\n" },
    { path: here("trace-vector.json"), text: JSON.stringify(vector, null, 2) + "\n" },
    { path: here("fixture-manifest.json"), text: JSON.stringify(manifest, null, 2) + "\n" },
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const { path, text } of await ecFixtures()) {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
