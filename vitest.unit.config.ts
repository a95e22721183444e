import { defineConfig } from "vitest/config";

/** Pure protocol code under plain Node: no Workers runtime involved. */
export default defineConfig({
  test: { include: ["test/unit/**/*.test.ts"], environment: "node" },
});
