/**
 * `npm start`: the service on local KV and Durable Objects, offline, on PORT (default 8787),
 * ready to use: this deployment's own signing key and the demo issuer pinned, the demo relying
 * party registered with the token in .dev.vars. State persists under .wrangler/state
 * (COUNTERSIGN_STATE_DIR overrides), so replay protection survives a restart.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { demoAnchor, DEMO_AUDIENCE, DEMO_ISSUER, DEMO_RELYING_PARTY } from "../cli/demo-identity.js";
import { ensureDevVars, readDevVars } from "./dev-vars.js";
import { ensurePortFree, PROJECT_ROOT, startLocalServer, type LocalServer } from "./local-server.js";
import { RETIRED_TOKEN_TTL_SECONDS } from "../worker/stores.js";

const added = ensureDevVars(PROJECT_ROOT);
if (added.length > 0) console.log(`.dev.vars: added ${added.join(", ")} from .dev.vars.example (demo values)`);
const vars = readDevVars(resolve(PROJECT_ROOT, ".dev.vars"));
// PORT is a TCP port to listen on, 1-65535 in decimal: 0 (or an empty PORT) would let wrangler pick
// a port of its own while this script waited on :0 for a minute, and the rest is refused by name.
const portText = process.env.PORT ?? "8787";
if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
  console.error(`npm start: PORT must be a port number from 1 to 65535, not ${JSON.stringify(portText)}`);
  process.exit(1);
}
const port = Number(portText);
const persistTo = resolve(PROJECT_ROOT, process.env.COUNTERSIGN_STATE_DIR ?? ".wrangler/state");

// SIGINT, SIGTERM or SIGHUP stops whatever instance runs at that moment, at any phase: while the
// setup instance boots or works, between the two, while the service boots on PORT, or once it
// serves. wrangler runs in a process group of its own, so a Ctrl-C, or the hangup of a terminal or
// SSH session closed under npm start, reaches it only through here (unhandled, a SIGHUP ended npm
// start and left wrangler and workerd serving PORT with no parent).
const stopping = new AbortController();
let server: LocalServer | null = null;
const stop = () => {
  if (stopping.signal.aborted) return;
  stopping.abort(); // a boot in flight stops its instance and rejects; its catch exits
  if (server) void server.stop().then(() => process.exit(0));
};
// (Node resets an ignored SIGHUP to its default at startup, so nohup never kept npm start alive.)
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(sig, stop);

// A port that is taken, or a server that never became healthy, is said in one line, not a stack trace.
const fail = (err: Error): never => {
  if (stopping.signal.aborted) process.exit(0);
  console.error(`npm start: ${err.message}`);
  process.exit(1);
};
// The state is set up (own key and demo issuer pinned, demo party registered) by a first instance
// on a spare loopback port; only then is the service started on PORT, so nothing answers there
// until it is ready: /healthz answering means the demo identity and party are in place.
await ensurePortFree(port).catch(fail);
server = await startLocalServer({ persistTo, signal: stopping.signal }).catch(fail);
const setup: LocalServer = server;

const admin = (method: string, path: string, body?: unknown) =>
  fetch(`${setup.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${vars.ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const step = async (what: string, work: () => Promise<Response>, ok: number[] = [200]) => {
  const res = await work();
  if (!ok.includes(res.status)) throw new Error(`${what} failed: ${res.status} ${await res.text()}`);
  return res;
};

type PinBody = { issuer: string; org_id?: string | null; chain_sealer?: boolean; keys: { kid: string; public_key: string }[] };
type Held = { org_id: string | null; chain_sealer: boolean; keys: { kid: string; public_key: string; not_before: number | null; not_after: number | null; revoked: boolean }[] };
// Whether the state already pins `body` as it is: the same organisation and sealer flag, exactly its
// keys, none revoked or bounded in time. A restart then leaves the anchor alone, so what an admin set
// on it beside its keys (verifier_class, audit, config_hashes, sequence_policy) survives the restart;
// a first start, a re-key or a revoked key pins it again (the last refused with 409, as before).
const alreadyPinned = async (body: PinBody): Promise<boolean> => {
  const res = await fetch(`${setup.url}/v1/issuers/${encodeURIComponent(body.issuer)}`);
  if (res.status !== 200) return false;
  const held = (await res.json()) as Held;
  return held.org_id === (body.org_id ?? null) && held.chain_sealer === (body.chain_sealer ?? false) &&
    held.keys.length === body.keys.length &&
    body.keys.every((k) => held.keys.some((h) => h.kid === k.kid && h.public_key === k.public_key && !h.revoked && h.not_before === null && h.not_after === null));
};
const pin = async (what: string, body: PinBody, ok: number[] = [200]): Promise<Response | null> =>
  (await alreadyPinned(body)) ? null : step(what, () => admin("PUT", "/v1/admin/anchors", body), ok);

try {
  const own = await step("reading /.well-known/ccs-issuer", () => fetch(`${setup.url}/.well-known/ccs-issuer`));
  const identity = (await own.json()) as PinBody;
  await pin("pinning this deployment's own key", identity);
  // The demo key's seed is public, so revoking it is a natural thing to do on a local state: that
  // revocation stands (a revoked key is never pinned again), and the instance starts without it.
  const demoPin = await pin("pinning the demo issuer", demoAnchor(), [200, 409]);
  let demoRevoked = false;
  if (demoPin?.status === 409) {
    const text = await demoPin.text();
    demoRevoked = text.includes('"code":"ANCHOR_KEY_REVOKED"');
    if (!demoRevoked) throw new Error(`pinning the demo issuer failed: 409 ${text}`);
  }
  // Kept when this state already holds it as .dev.vars says (registered by an earlier start with
  // the token whose digest that start noted beside the state, for the demo's audience), so its
  // usage records and journal survive a restart; re-registered otherwise.
  // The list is paged (name order): read pages until the demo party's name is passed or the list ends.
  type Page = { next_cursor: string | null; relying_parties: { name: string; audiences: string[] }[] };
  let demo: Page["relying_parties"][number] | undefined;
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
    const query: string = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
    const page = (await (await step("listing relying parties", () => admin("GET", `/v1/admin/relying-parties${query}`))).json()) as Page;
    demo = page.relying_parties.find((p) => p.name === DEMO_RELYING_PARTY);
    if (demo || page.relying_parties.some((p) => p.name > DEMO_RELYING_PARTY)) break;
    cursor = page.next_cursor;
  }
  const noted = resolve(persistTo, "demo-relying-party.sha256");
  const tokenDigest = createHash("sha256").update(vars.DEMO_RP_TOKEN ?? "").digest("hex");
  const sameToken = existsSync(noted) && readFileSync(noted, "utf8").trim() === tokenDigest;
  // The noted digest says which token this start registered, not which the party holds now: a
  // rotation since (POST /v1/admin/relying-parties/{name}/token, relying-parties rotate) may have
  // left DEMO_RP_TOKEN refused, or freed it for another party registered with it (a probe with the
  // token, 401 or not, cannot tell that party from the demo one). So the kept party
  // is handed a throwaway token and then DEMO_RP_TOKEN, in place (its journal and usage records
  // kept): the second rotation succeeds only when no other party holds DEMO_RP_TOKEN.
  const kept = demo && demo.audiences.join(",") === DEMO_AUDIENCE && sameToken;
  if (kept) {
    const demoTokenPath = `/v1/admin/relying-parties/${DEMO_RELYING_PARTY}/token`;
    await step("freeing DEMO_RP_TOKEN from the demo relying party", () => admin("POST", demoTokenPath, {}));
    const back = await step("giving the demo relying party DEMO_RP_TOKEN", () => admin("POST", demoTokenPath, { token: vars.DEMO_RP_TOKEN }), [200, 409]);
    if (back.status === 409)
      throw new Error(
        "DEMO_RP_TOKEN in .dev.vars is another relying party's token on this state (one registered with it after the demo party's token was rotated), " +
          "so the demo party cannot hold it: set another DEMO_RP_TOKEN in .dev.vars (or start on a new COUNTERSIGN_STATE_DIR)",
      );
  } else {
    await step("clearing the demo relying party", () => admin("DELETE", `/v1/admin/relying-parties/${DEMO_RELYING_PARTY}`), [200, 404]);
    const register = () => step("registering the demo relying party", () =>
      admin("POST", "/v1/admin/relying-parties", { name: DEMO_RELYING_PARTY, audiences: [DEMO_AUDIENCE], token: vars.DEMO_RP_TOKEN }), [201, 409]);
    let registered = await register();
    // A token a party gave up stays taken for RETIRED_TOKEN_TTL_SECONDS (worker/stores.ts): the demo
    // party deleted just now (above) or shortly before this start held DEMO_RP_TOKEN, and the new
    // registration may take it only once KV expired that record. Before, the start failed 409 here;
    // it now waits that long, then says DEMO_RP_TOKEN is another party's.
    if (registered.status === 409) {
      console.log(`  DEMO_RP_TOKEN was given up by a relying party less than ${RETIRED_TOKEN_TTL_SECONDS} s ago (the demo party, deleted and registered again): waiting until it is free`);
      for (const deadline = Date.now() + (RETIRED_TOKEN_TTL_SECONDS + 30) * 1000; registered.status === 409 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 2_000));
        if (stopping.signal.aborted) throw new Error("stopped");
        registered = await register();
      }
      if (registered.status === 409)
        throw new Error(`registering the demo relying party failed: 409 ${await registered.text()} (DEMO_RP_TOKEN in .dev.vars is another relying party's token on this state: set another DEMO_RP_TOKEN in .dev.vars, or start on a new COUNTERSIGN_STATE_DIR)`);
    }
    writeFileSync(noted, tokenDigest + "\n");
  }
  await setup.stop();
  server = null;
  const service = await startLocalServer({ port, persistTo, inheritOutput: true, signal: stopping.signal }).catch(fail);
  if (stopping.signal.aborted) {
    await service.stop();
    process.exit(0);
  }
  server = service;
  // A service that stops by itself (wrangler or workerd killed or crashed) is said, and npm start
  // exits 1 with it: a supervisor or a CI step sees the instance gone, not a clean exit.
  // wrangler may go alone (killed or crashed) and leave its workerd serving PORT: what is left of the
  // instance is stopped before npm start says so, so PORT answers nothing once it has exited.
  void service.exited.then(async (how) => {
    if (stopping.signal.aborted) return;
    await service.stop();
    if (stopping.signal.aborted) return;
    console.error(`npm start: the service on ${service.url} stopped by itself (wrangler dev exited: ${how})`);
    process.exit(1);
  });
  console.log(`countersign is listening on ${service.url}`);
  console.log(demoRevoked
    ? `  own issuer ${identity.issuer} pinned; demo issuer ${DEMO_ISSUER}'s key was revoked on this state, and stays so`
    : `  own issuer ${identity.issuer} and demo issuer ${DEMO_ISSUER} pinned`);
  console.log(`  demo relying party "${DEMO_RELYING_PARTY}" registered for ${DEMO_AUDIENCE} (token: DEMO_RP_TOKEN in .dev.vars)`);
} catch (err) {
  await setup.stop();
  if (stopping.signal.aborted) process.exit(0);
  console.error(`countersign could not be set up (on a spare port; nothing was started on ${port}): ${(err as Error).message}`);
  process.exit(1);
}
