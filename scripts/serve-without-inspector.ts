/**
 * Serves the bench Worker the way `wrangler dev` does (same proxy, local KV and Durable Objects
 * persisted under a directory) but with the DevTools inspector off, through wrangler's own
 * `unstable_startWorker`. `wrangler dev` attaches an inspector to the runtime, and every
 * `console.log` then crosses a DevTools WebSocket and wrangler's source-mapping before it is
 * printed: ~90 µs of the isolate's time per line here, a cost of the local tool that a deployed
 * Worker (no inspector; logs captured by the runtime) does not pay. Without the inspector, wrangler
 * reads the runtime's structured log lines from its stdout instead.
 *
 * Run as a child process by `startLocalServer({ inspector: false })` (the benchmarks): `tsx scripts/serve-without-inspector.ts <config> <persist-dir> <port> <vars-json>`;
 * prints one line `{"url":…}` when ready and stops on SIGTERM.
 */
import { unstable_startWorker } from "wrangler";

const [config, persist, port, varsJson] = process.argv.slice(2);
const vars = JSON.parse(varsJson) as Record<string, string>;
const worker = await unstable_startWorker({
  config,
  bindings: Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, { type: "plain_text" as const, value: v }])),
  dev: { remote: false, inspector: false, persist, watch: false, logLevel: "warn", server: { hostname: "127.0.0.1", port: Number(port) } },
});
await worker.ready;
const url = await worker.url;
process.stdout.write(JSON.stringify({ url: url.origin }) + "\n");
const stop = async () => {
  await worker.dispose();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
