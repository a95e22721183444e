/**
 * The README's two-minute tour, run as written: its first shell block after "A two-minute tour",
 * in a scratch folder, against an instance started the way `npm start` starts one (own key and
 * demo relying party ready), with localhost:8787 pointed at that instance.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { offlineEnv, PROJECT_ROOT, startLocalServer, type LocalServer } from "../../scripts/local-server.js";
import { readDevVars } from "../../scripts/dev-vars.js";

const scratch = mkdtempSync(join(tmpdir(), "countersign-tour-"));
const vars = readDevVars(resolve(PROJECT_ROOT, ".dev.vars.example"));
let server: LocalServer;

function tourScript(port: number): string {
  const readme = readFileSync(resolve(PROJECT_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## A two-minute tour"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
  return block.replaceAll("localhost:8787", `127.0.0.1:${port}`);
}

describe("the README's tour", () => {
  beforeAll(async () => {
    server = await startLocalServer({ persistTo: join(scratch, "state"), vars });
    const admin = { authorization: `Bearer ${vars.ADMIN_TOKEN}`, "content-type": "application/json" };
    const party = await fetch(`${server.url}/v1/admin/relying-parties`, { method: "POST", headers: admin, body: JSON.stringify({ name: "demo-relying-party", audiences: ["https://relying-party.example"], token: vars.DEMO_RP_TOKEN }) });
    expect(party.status).toBe(201);
    // The tour runs at a checkout: .dev.vars as npm start leaves it, and `npx countersign` resolving to this one.
    writeFileSync(join(scratch, ".dev.vars"), readFileSync(resolve(PROJECT_ROOT, ".dev.vars.example")));
    mkdirSync(join(scratch, "node_modules/.bin"), { recursive: true });
    symlinkSync(resolve(PROJECT_ROOT, "cli/bin.mjs"), join(scratch, "node_modules/.bin/countersign"));
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("pins your own issuer, signs, verifies offline, then accepts once and refuses the replay", () => {
    const script = tourScript(server.port);
    const run = spawnSync("bash", ["-euo", "pipefail", "-c", script], {
      cwd: scratch,
      encoding: "utf8",
      env: { ...offlineEnv(), COUNTERSIGN_URL: server.url },
    });
    expect(run.status, run.stderr).toBe(0);
    const answers = run.stdout.split("\n").filter((l) => l.startsWith('{"valid"'));
    expect(answers).toHaveLength(2);
    const [first, replay] = answers.map((l) => JSON.parse(l));
    expect(first).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true, issuer: "https://issuer.example" });
    expect(replay).toMatchObject({ valid: false, decision: "reject" });
    expect(replay.failures[0].code).toBe("REPLAY_DETECTED");
    expect(run.stdout).toMatch(/"decision": "audit"/);
  });
});
