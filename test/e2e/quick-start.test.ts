/**
 * The README's quick start, run as written: `npm start` (here on a free port and a scratch
 * state folder), `npm run demo`, then the curl call, as HTTP.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, offlineEnv, PROJECT_ROOT } from "../../scripts/local-server.js";
import { readDevVars } from "../../scripts/dev-vars.js";
import { RETIRED_TOKEN_TTL_SECONDS } from "../../worker/stores.js";

const tsx = resolve(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
const scratch = mkdtempSync(join(tmpdir(), "countersign-quickstart-"));
let child: ChildProcess;
let url: string;
let output = "";

/** The process id (or group id) of the wrangler process whose command line holds `command` and serves `port`. */
function processOf(column: "pid" | "pgid", command: string, port: number): number {
  const line = spawnSync("ps", ["-eo", `${column}=,args=`], { encoding: "utf8" }).stdout.split("\n").find((l) => l.includes(command) && l.includes(`--port ${port} `));
  return Number(line!.trim().split(/\s+/)[0]);
}

/**
 * Another npm start, on `port` and the state folder `dir`, its output gathered: `ready()` waits for
 * its setup to be done (or for it to exit), `left()` lists the processes still running on `dir`.
 */
function launch(port: number, dir: string) {
  // As npm start runs it (package.json: node --import tsx), not through the tsx CLI: that wrapper
  // relays a signal to a child it runs the script in and, when the child's acknowledgement takes
  // over 30 ms (a loaded 2-core CI while wrangler boots), SIGKILLs it and exits 143, which is the
  // wrapper's doing, not npm start's (seen once in a clean-clone run of the SIGTERM-while-booting test).
  const argv = ["--import", "tsx", "scripts/start.ts"];
  let out = "";
  const running = spawn(process.execPath, argv, {
    cwd: PROJECT_ROOT,
    env: { ...offlineEnv(), WRANGLER_LOG: undefined, PORT: String(port), COUNTERSIGN_STATE_DIR: dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.stdout!.on("data", (d) => (out += d));
  running.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => running.once("exit", (code) => r(code)));
  const until = async (done: () => boolean, stepMs = 100) => {
    const deadline = Date.now() + 60_000;
    while (!done() && Date.now() < deadline && running.exitCode === null) await new Promise((r) => setTimeout(r, stepMs));
  };
  const left = () => spawnSync("ps", ["-eo", "pgid=,stat=,args="], { encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes(dir) && !/^\s*\d+\s+Z/.test(l));
  /** Kills what is left on `dir`, whole process groups, and the start itself. */
  const reap = () => {
    for (const line of left()) {
      try {
        process.kill(-Number(line.trim().split(/\s+/)[0]), "SIGKILL");
      } catch { /* gone */ }
    }
    if (running.exitCode === null) running.kill("SIGKILL");
  };
  return { running, exited, output: () => out, until, ready: () => until(() => out.includes("demo relying party")), left, reap };
}

/** A start on `dir` set up and serving; `work` runs against its URL, then the start is stopped (SIGTERM) and what it left reaped. */
async function servedOnce(dir: string, work: (base: string) => Promise<void>): Promise<void> {
  const first = launch(await freePort(), dir);
  try {
    await first.ready();
    const base = /countersign is listening on (\S+)/.exec(first.output())?.[1];
    expect(base, first.output()).toBeTruthy();
    await work(base!);
  } finally {
    first.running.kill("SIGTERM");
    await first.exited;
    first.reap();
  }
}

describe("the quick start", () => {
  const start = async (port: number) => {
    output = "";
    child = spawn(process.execPath, [tsx, "scripts/start.ts"], {
      cwd: PROJECT_ROOT,
      // As a user runs it: no WRANGLER_LOG of the suite's own.
      env: { ...offlineEnv(), WRANGLER_LOG: undefined, PORT: String(port), COUNTERSIGN_STATE_DIR: join(scratch, "state") },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const deadline = Date.now() + 90_000;
    while (!output.includes("demo relying party") && !output.includes("could not be set up") && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 200));
  };
  const stop = async () => {
    if (child?.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await exited;
    }
  };

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    await start(port);
    expect(output, output).toContain("pinned");
  });

  afterAll(async () => {
    await stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("npm start serves on PORT with the demo issuer pinned; npm run demo's receipt is accepted once", async () => {
    const demoFile = join(scratch, "demo.json");
    const demo = spawnSync(process.execPath, [tsx, "cli/demo.ts", demoFile], { cwd: PROJECT_ROOT, encoding: "utf8" });
    expect(demo.status, demo.stderr).toBe(0);
    const body = readFileSync(demoFile, "utf8");
    const token = readDevVars(resolve(PROJECT_ROOT, ".dev.vars.example")).DEMO_RP_TOKEN;
    const verify = (authorization = `Bearer ${token}`) =>
      fetch(`${url}/v1/receipts/verify`, { method: "POST", headers: { "content-type": "application/json", authorization }, body });
    const anonymous = await verify("");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer /);
    expect(await (await verify()).json()).toMatchObject({ valid: true, decision: "accept", issuer: "https://demo-issuer.example" });
    expect(((await (await verify()).json()) as any).failures[0].code).toBe("REPLAY_DETECTED");
    // npm start shows the Worker's decision lines (README "Logs"): one for each of the two judged calls.
    const deadline = Date.now() + 10_000;
    const decisionLines = () => output.split("\n").filter((l) => l.includes('"event":"decision"'));
    while (decisionLines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(decisionLines().map((l) => JSON.parse(l.slice(l.indexOf("{"))).decision)).toEqual(["accept", "reject"]);
  });

  it("a second npm start on the same PORT refuses in one line and exits 1, leaving the first serving", async () => {
    const port = new URL(url).port;
    const second = spawnSync(process.execPath, [tsx, "scripts/start.ts"], {
      cwd: PROJECT_ROOT,
      env: { ...offlineEnv(), PORT: port, COUNTERSIGN_STATE_DIR: join(scratch, "state-2") },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(second.status).toBe(1);
    expect(second.stderr.trim()).toBe(`npm start: port ${port} is busy: stop what listens there or set PORT`);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it("publishes this deployment's own key, pinned at start: what /.well-known/ccs-issuer says is what the anchor holds", async () => {
    const own = (await (await fetch(`${url}/.well-known/ccs-issuer`)).json()) as any;
    expect(own.keys[0]).toMatchObject({ kid: "countersign-demo-1", alg: "Ed25519" });
    const pinned = (await (await fetch(`${url}/v1/issuers/${encodeURIComponent(own.issuer)}`)).json()) as any;
    expect(pinned.keys.map((k: any) => k.fingerprint)).toEqual(own.keys.map((k: any) => k.fingerprint));
  });

  it("a restart on a state where the demo issuer's key was revoked starts, and the revocation stands", async () => {
    const admin = { authorization: "Bearer demo-admin-token", "content-type": "application/json" };
    const revoked = await fetch(`${url}/v1/admin/anchors/revoke`, { method: "POST", headers: admin, body: JSON.stringify({ issuer: "https://demo-issuer.example", kid: "demo-2026" }) });
    expect(revoked.status).toBe(200);
    await stop();
    await start(Number(new URL(url).port));
    expect(output, output).toContain("countersign is listening");
    expect(output).toContain("key was revoked on this state, and stays so");
    const anchor = (await (await fetch(`${url}/v1/issuers/${encodeURIComponent("https://demo-issuer.example")}`)).json()) as any;
    expect(anchor.revoked.map((r: any) => r.kid)).toEqual(["demo-2026"]);
  });

  it("a restart after the demo party's token was rotated gives it DEMO_RP_TOKEN back, its records kept", async () => {
    // Before, the start kept the party as it was (its noted digest still DEMO_RP_TOKEN's) and said
    // "token: DEMO_RP_TOKEN in .dev.vars", while that token was refused 401.
    const admin = { authorization: "Bearer demo-admin-token", "content-type": "application/json" };
    const demoToken = readDevVars(resolve(PROJECT_ROOT, ".dev.vars")).DEMO_RP_TOKEN;
    const party = (token: string, path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await party(demoToken, "/v1/journal/reserve", { idempotency_key: "quick-start-rotated", action_digest: "d" })).status).toBe(200);
    const rotated = await fetch(`${url}/v1/admin/relying-parties/demo-relying-party/token`, { method: "POST", headers: admin, body: "{}" });
    expect(rotated.status).toBe(200);
    expect((await party(demoToken, "/v1/journal/load-by-idempotency", { idempotency_key: "quick-start-rotated" })).status).toBe(401);
    await stop();
    await start(Number(new URL(url).port));
    expect(output, output).toContain("countersign is listening");
    const loaded = await party(demoToken, "/v1/journal/load-by-idempotency", { idempotency_key: "quick-start-rotated" });
    expect([loaded.status, ((await loaded.json()) as any).kind]).toEqual([200, "found"]);
    expect((await party((await rotated.json() as any).token, "/v1/journal/load-by-idempotency", { idempotency_key: "quick-start-rotated" })).status).toBe(401);
  });

  it("a restart after DEMO_RP_TOKEN was given to another party does not say the demo party holds it", { timeout: 360_000 }, async () => {
    // Before (rv-68), the start asked only whether DEMO_RP_TOKEN authenticated (not 401): once the
    // demo party's token was rotated and another party registered with DEMO_RP_TOKEN, a restart kept
    // the demo party and printed "token: DEMO_RP_TOKEN in .dev.vars" while that token was the other's.
    const dir = join(scratch, "state-squatted");
    const admin = { authorization: "Bearer demo-admin-token", "content-type": "application/json" };
    const demoToken = readDevVars(resolve(PROJECT_ROOT, ".dev.vars")).DEMO_RP_TOKEN;
    await servedOnce(dir, async (base) => {
      expect((await fetch(`${base}/v1/admin/relying-parties/demo-relying-party/token`, { method: "POST", headers: admin, body: "{}" })).status).toBe(200);
      const squatter = { name: "zz-squatter", audiences: ["https://relying-party.example"], token: demoToken };
      const squat = () => fetch(`${base}/v1/admin/relying-parties`, { method: "POST", headers: admin, body: JSON.stringify(squatter) });
      // A token given up stays taken for RETIRED_TOKEN_TTL_SECONDS (review rv-79): the squatter takes it once KV expired it.
      expect((await squat()).status).toBe(409);
      let status = 409;
      for (const deadline = Date.now() + (RETIRED_TOKEN_TTL_SECONDS + 60) * 1000; status === 409 && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 5_000));
        status = (await squat()).status;
      }
      expect(status).toBe(201);
    });
    const again = launch(await freePort(), dir);
    try {
      await again.until(() => again.output().includes("countersign is listening"));
      expect(again.output()).not.toContain("countersign is listening");
      expect(again.output()).toContain("DEMO_RP_TOKEN in .dev.vars is another relying party's token");
      expect(await again.exited).toBe(1);
    } finally {
      if (again.running.exitCode === null) again.running.kill("SIGTERM");
      await again.exited;
      again.reap();
    }
  });

  it("a restart right after the demo party was deleted registers it again with DEMO_RP_TOKEN, once the token it gave up is free", { timeout: 360_000 }, async () => {
    // Before (review rv-82), a start less than RETIRED_TOKEN_TTL_SECONDS after the demo party was
    // deleted (by an admin, or by a start re-registering it) failed: its registration with
    // DEMO_RP_TOKEN was refused 409, the token still held by the deleted party's retired record.
    const dir = join(scratch, "state-deleted");
    const admin = { authorization: "Bearer demo-admin-token", "content-type": "application/json" };
    const demoToken = readDevVars(resolve(PROJECT_ROOT, ".dev.vars")).DEMO_RP_TOKEN;
    await servedOnce(dir, async (base) => {
      expect((await fetch(`${base}/v1/admin/relying-parties/demo-relying-party`, { method: "DELETE", headers: admin })).status).toBe(200);
    });
    const again = launch(await freePort(), dir);
    try {
      const deadline = Date.now() + (RETIRED_TOKEN_TTL_SECONDS + 90) * 1000;
      while (!again.output().includes("countersign is listening") && Date.now() < deadline && again.running.exitCode === null) await new Promise((r) => setTimeout(r, 500));
      expect(again.output()).not.toContain("could not be set up");
      expect(again.output()).toContain("countersign is listening");
      const base = /countersign is listening on (\S+)/.exec(again.output())![1];
      const verified = await fetch(`${base}/v1/receipts/verify`, { method: "POST", headers: { authorization: `Bearer ${demoToken}`, "content-type": "application/json" }, body: "{}" });
      expect(verified.status).not.toBe(401);
    } finally {
      if (again.running.exitCode === null) again.running.kill("SIGTERM");
      await again.exited;
      again.reap();
    }
  });

  it("on a fresh state, the first /healthz 200 on PORT comes with the demo issuer pinned and DEMO_RP_TOKEN accepted", async () => {
    // Before, /healthz answered while the start was still pinning and registering: a call made on
    // its first 200 found the demo issuer 404 and DEMO_RP_TOKEN refused 401 (review rv-58).
    const port = await freePort();
    const fresh = launch(port, join(scratch, "state-fresh"));
    try {
      const deadline = Date.now() + 90_000;
      let healthy = false;
      while (!healthy && Date.now() < deadline && fresh.running.exitCode === null) {
        healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false);
        if (!healthy) await new Promise((r) => setTimeout(r, 50));
      }
      expect(healthy).toBe(true);
      const demoToken = readDevVars(resolve(PROJECT_ROOT, ".dev.vars")).DEMO_RP_TOKEN;
      const [issuer, usage] = await Promise.all([
        fetch(`http://127.0.0.1:${port}/v1/issuers/${encodeURIComponent("https://demo-issuer.example")}`),
        fetch(`http://127.0.0.1:${port}/v1/usage?invocation_id=quick-start-probe`, { headers: { authorization: `Bearer ${demoToken}` } }),
      ]);
      expect([issuer.status, usage.status]).toEqual([200, 404]);
    } finally {
      fresh.running.kill("SIGTERM");
      await fresh.exited;
      fresh.reap();
    }
  });

  it("a restart leaves this deployment's own anchor as an admin set it: its verifier class and audit survive", async () => {
    const admin = { authorization: "Bearer demo-admin-token", "content-type": "application/json" };
    const own = (await (await fetch(`${url}/.well-known/ccs-issuer`)).json()) as any;
    const audit = { report: "https://audits.example/2026", date: "2026-11-01" };
    const pinned = await fetch(`${url}/v1/admin/anchors`, { method: "PUT", headers: admin, body: JSON.stringify({ ...own, verifier_class: "B", audit }) });
    expect(pinned.status).toBe(200);
    await stop();
    await start(Number(new URL(url).port));
    expect(output, output).toContain("countersign is listening");
    const anchor = (await (await fetch(`${url}/v1/issuers/${encodeURIComponent(own.issuer)}`)).json()) as any;
    expect(anchor).toMatchObject({ verifier_class: "B", audit, chain_sealer: true });
    expect(anchor.keys.map((k: any) => k.fingerprint)).toEqual(own.keys.map((k: any) => k.fingerprint));
  });

  it("SIGTERM to npm start while an instance boots, the setup's or PORT's, leaves no wrangler or workerd behind", async () => {
    // Before, the handlers were registered only after the setup instance was healthy, and during
    // the service's boot they stopped the setup instance (already stopped) and exited: wrangler runs
    // in a process group of its own, so a SIGTERM (or a Ctrl-C) in either boot left it running,
    // the second time serving on PORT with its parent gone (review rv-60).
    for (const phase of ["setup", "service"] as const) {
      const port = await freePort();
      const dir = join(scratch, `state-sigterm-${phase}`);
      const booting = launch(port, dir);
      try {
        // The setup instance's output is kept, the service's shown: its wrangler banner means the
        // service on PORT is booting; a wrangler process on the state means the setup one is.
        const booted = () => (phase === "service" ? booting.output().includes("Binding") : booting.left().some((l) => l.includes("wrangler")));
        await booting.until(booted, 20);
        expect(booted(), booting.output()).toBe(true);
        expect(booting.output()).not.toContain("countersign is listening");
        booting.running.kill("SIGTERM");
        expect(await booting.exited).toBe(0);
        await new Promise((r) => setTimeout(r, 1500));
        expect(booting.left(), phase).toEqual([]);
        expect(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => "refused")).toBe("refused");
      } finally {
        booting.reap();
      }
    }
  });

  it("a PORT that is no port from 1 to 65535 is refused in one line before anything starts", () => {
    // Before, PORT=0 (or an empty PORT) let wrangler listen on a port of its choosing while the start
    // waited a minute on :0 for a /healthz that never came.
    for (const bad of ["0", "", "8787x", "65536"]) {
      const res = spawnSync(process.execPath, [tsx, "scripts/start.ts"], {
        cwd: PROJECT_ROOT,
        env: { ...offlineEnv(), PORT: bad, COUNTERSIGN_STATE_DIR: join(scratch, "state-bad-port") },
        encoding: "utf8",
        timeout: 30_000,
      });
      expect([res.status, res.stderr.trim()]).toEqual([1, `npm start: PORT must be a port number from 1 to 65535, not ${JSON.stringify(bad)}`]);
    }
  });

  it("a service that stops by itself is said, and npm start exits 1 with it", async () => {
    // Before, npm start just ended, exit 0 and nothing said, when wrangler died under it.
    const port = await freePort();
    const running = launch(port, join(scratch, "state-died"));
    try {
      await running.ready();
      expect(running.output()).toContain("countersign is listening");
      process.kill(-processOf("pgid", "wrangler.js dev", port), "SIGKILL");
      expect(await running.exited).toBe(1);
      expect(running.output()).toContain(`npm start: the service on http://127.0.0.1:${port} stopped by itself (wrangler dev exited: SIGKILL)`);
    } finally {
      running.reap();
    }
  });

  it("SIGHUP (a terminal or SSH session closed) to npm start once it serves leaves no wrangler or workerd behind", async () => {
    // Before (review rv-65), SIGHUP was not handled: npm start died of it, and wrangler and workerd,
    // in a process group of their own, went on serving PORT with no parent.
    const port = await freePort();
    const running = launch(port, join(scratch, "state-sighup"));
    try {
      await running.ready();
      expect(running.output()).toContain("countersign is listening");
      running.running.kill("SIGHUP");
      expect(await running.exited).toBe(0);
      await new Promise((r) => setTimeout(r, 1500));
      expect(running.left()).toEqual([]);
      expect(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => "refused")).toBe("refused");
    } finally {
      running.reap();
    }
  });

  it("wrangler killed alone: npm start stops the workerd it left serving PORT before it says the service stopped", async () => {
    // Before (review rv-65), kill -KILL of wrangler's own process left its workerd serving PORT
    // ({"ok":true} on /healthz) while npm start said the service had stopped and exited 1.
    const port = await freePort();
    const running = launch(port, join(scratch, "state-wrangler-alone"));
    try {
      await running.ready();
      expect(running.output()).toContain("countersign is listening");
      // wrangler's own process (wrangler-dist/cli.js, the child of bin/wrangler.js) and nothing else.
      process.kill(processOf("pid", "wrangler-dist/cli.js dev", port), "SIGKILL");
      expect(await running.exited).toBe(1);
      expect(running.output()).toContain(`npm start: the service on http://127.0.0.1:${port} stopped by itself`);
      const answered = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(3000) }).then((r) => r.status, () => null);
      expect(answered).toBeNull();
    } finally {
      running.reap();
    }
  });
});
