/**
 * `npm start`: the service on local KV and Durable Objects (persisted under .wrangler/state),
 * offline, on PORT (default 8787), with the demo issuer pinned.
 */
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { demoAnchor, DEMO_ISSUER } from "../cli/demo-identity.js";
import { PROJECT_ROOT, startLocalServer } from "./local-server.js";

const devVars = resolve(PROJECT_ROOT, ".dev.vars");
if (!existsSync(devVars)) {
  copyFileSync(resolve(PROJECT_ROOT, ".dev.vars.example"), devVars);
  console.log("created .dev.vars from .dev.vars.example (demo values)");
}
const token = /^ADMIN_TOKEN=(.*)$/m.exec(readFileSync(devVars, "utf8"))?.[1]?.trim();
const port = Number(process.env.PORT ?? 8787);

const server = await startLocalServer({ port, persistTo: resolve(PROJECT_ROOT, ".wrangler/state"), inheritOutput: true });
const pin = await fetch(`${server.url}/v1/admin/anchors`, {
  method: "PUT",
  headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  body: JSON.stringify(demoAnchor()),
});
console.log(pin.ok ? `countersign is listening on ${server.url} (demo issuer ${DEMO_ISSUER} pinned)` : `countersign is listening on ${server.url}; pinning the demo issuer failed: ${pin.status} ${await pin.text()}`);
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => void server.stop().then(() => process.exit(0)));
}
