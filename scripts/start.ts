/**
 * `npm start`: the service on local KV and Durable Objects, offline, on PORT (default 8787),
 * with the demo issuer pinned. State persists under .wrangler/state (COUNTERSIGN_STATE_DIR
 * overrides), so replay protection survives a restart.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { demoAnchor, DEMO_ISSUER } from "../cli/demo-identity.js";
import { ensureDevVars } from "./dev-vars.js";
import { PROJECT_ROOT, startLocalServer } from "./local-server.js";

if (ensureDevVars(PROJECT_ROOT)) console.log("created .dev.vars from .dev.vars.example (demo values)");
const token = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(resolve(PROJECT_ROOT, ".dev.vars"), "utf8"))?.[1]?.trim();
const port = Number(process.env.PORT ?? 8787);
const persistTo = resolve(PROJECT_ROOT, process.env.COUNTERSIGN_STATE_DIR ?? ".wrangler/state");

const server = await startLocalServer({ port, persistTo, inheritOutput: true });
const pin = await fetch(`${server.url}/v1/admin/anchors`, {
  method: "PUT",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: JSON.stringify(demoAnchor()),
});
console.log(
  pin.ok
    ? `countersign is listening on ${server.url} (demo issuer ${DEMO_ISSUER} pinned)`
    : `countersign is listening on ${server.url}; pinning the demo issuer failed: ${pin.status} ${await pin.text()}`,
);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => void server.stop().then(() => process.exit(0)));
}
