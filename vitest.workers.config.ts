import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

/** Inside workerd, with real KV and SQLite-backed Durable Objects (storage isolated per file). */
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          ADMIN_TOKEN: "test-admin-token",
          AUDIENCES: "https://relying-party.example,https://second-party.example",
          ORG_ID: "relying-org",
        },
      },
    }),
  ],
  test: { include: ["test/workers/**/*.test.ts"], testTimeout: 30_000 },
});
