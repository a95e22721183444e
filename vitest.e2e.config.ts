import { defineConfig } from "vitest/config";

/** Against a locally started instance (wrangler dev on a free loopback port). */
export default defineConfig({
  test: { include: ["test/e2e/**/*.test.ts"], environment: "node", testTimeout: 120_000, hookTimeout: 120_000, fileParallelism: false },
});
