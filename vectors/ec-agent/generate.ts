/**
 * Writes the EC-Agent fixtures derived from scenario.ts: bundle.json (the replay fixture,
 * `npm run replay -- vectors/ec-agent/bundle.json`) and trace-vector.json (the published
 * two-event trace digest vector). `npm run vectors:generate` rewrites them; a test checks that
 * a fresh generation is byte-identical.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { asciiCanonical, DOMAINS } from "../../worker/protocol/ec/canonical.js";
import { EC_SCHEMA_VERSION, indexedEvents, traceDigest, type TraceEvent } from "../../worker/protocol/ec/events.js";
import { toHex, utf8 } from "../../worker/protocol/encoding.js";
import { buildRuns, scenarioBundle } from "./build.js";

export const TWO_EVENTS: TraceEvent[] = [
  { action_id: "a1", action_type: "retrieval", tool: "search", input: "café opening hours", output: "retrieved market", doc_id: "market", claim_id: null, attempt: 1 },
  { action_id: "a2", action_type: "answer", tool: null, input: null, output: "Opens at seven ☕ — closes at noon 📓", doc_id: null, claim_id: null, attempt: null },
];

export async function traceVector() {
  const canonical = asciiCanonical({ domain: DOMAINS.trace, events: indexedEvents(TWO_EVENTS), schema_version: EC_SCHEMA_VERSION });
  return {
    description: "Trace digest = SHA-256(domain separator ‖ canonical {domain, events, schema_version}). The separator is the ASCII bytes of `domain` followed by one line feed.",
    domain: DOMAINS.trace,
    domain_separator_hex: toHex(utf8(DOMAINS.trace + "\n")),
    schema_version: EC_SCHEMA_VERSION,
    events: TWO_EVENTS,
    canonical,
    digest: await traceDigest(TWO_EVENTS),
  };
}

export async function ecFixtures(): Promise<{ path: string; text: string }[]> {
  const here = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));
  return [
    { path: here("bundle.json"), text: JSON.stringify(await scenarioBundle(await buildRuns()), null, 2) + "\n" },
    { path: here("trace-vector.json"), text: JSON.stringify(await traceVector(), null, 2) + "\n" },
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const { path, text } of await ecFixtures()) {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
