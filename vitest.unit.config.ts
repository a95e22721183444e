import { defineConfig } from "vitest/config";

/** Pure protocol code under plain Node: no Workers runtime involved. */
export default defineConfig({
  // Vitest's 5 s default per test is a timing, not a bound: on a loaded 2-core machine the heavier
  // work-bound tests (a CLI child process, 256 receipts over a long answer) took over 5 s.
  test: { include: ["test/unit/**/*.test.ts"], environment: "node", testTimeout: 60_000 },
});
