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

const tsx = resolve(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
const scratch = mkdtempSync(join(tmpdir(), "countersign-quickstart-"));
let child: ChildProcess;
let url: string;
let output = "";

describe("the quick start", () => {
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [tsx, "scripts/start.ts"], {
      cwd: PROJECT_ROOT,
      env: { ...offlineEnv(), PORT: String(port), COUNTERSIGN_STATE_DIR: join(scratch, "state") },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const deadline = Date.now() + 90_000;
    while (!output.includes("demo issuer") && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 200));
    expect(output, output).toContain("pinned");
  });

  afterAll(async () => {
    if (child?.pid && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      process.kill(-child.pid, "SIGTERM");
      await exited;
    }
    rmSync(scratch, { recursive: true, force: true });
  });

  it("npm start serves on PORT with the demo issuer pinned; npm run demo's receipt is accepted once", async () => {
    const demoFile = join(scratch, "demo.json");
    const demo = spawnSync(process.execPath, [tsx, "cli/demo.ts", demoFile], { cwd: PROJECT_ROOT, encoding: "utf8" });
    expect(demo.status, demo.stderr).toBe(0);
    const body = readFileSync(demoFile, "utf8");
    const verify = () => fetch(`${url}/v1/receipts/verify`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.json() as Promise<any>);
    expect(await verify()).toMatchObject({ valid: true, decision: "accept", issuer: "https://demo-issuer.example" });
    expect((await verify()).failures[0].code).toBe("REPLAY_DETECTED");
  });
});
