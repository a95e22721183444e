/**
 * The bench-only Worker starts from its own wrangler config and its CPU cases run and verify
 * their inputs (the setup refuses inputs that do not verify). Times nothing: speed is the
 * bench's business, not the tests'.
 */
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { offlineEnv, PROJECT_ROOT } from "../../scripts/local-server.js";

describe("npm run bench", () => {
  it("starts the bench Worker and runs chosen CPU cases to completion", () => {
    const tsx = resolve(PROJECT_ROOT, "node_modules/tsx/dist/cli.mjs");
    const run = spawnSync(process.execPath, [tsx, "bench/run.ts", "--quick", "--cases=raw,full,chain-16-spot,bundle-replay"], { cwd: PROJECT_ROOT, env: offlineEnv(), encoding: "utf8", timeout: 240_000 });
    expect(run.status, run.stderr).toBe(0);
    for (const name of ["raw", "full", "chain-16-spot", "bundle-replay"]) expect(run.stdout).toMatch(new RegExp(`'?${name}'?: \\d`));
  });
});
