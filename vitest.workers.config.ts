import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { defineConfig } from "vitest/config";
import { EXTERNAL_VECTORS } from "./test/support/paths.js";

const external = (path: string) => JSON.parse(readFileSync(resolve(EXTERNAL_VECTORS, path), "utf8"));

/** Inside workerd, with real KV and SQLite-backed Durable Objects (storage isolated per file). */
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          ADMIN_TOKEN: "test-admin-token",
          AUDIENCES: "https://relying-party.example,https://second-party.example",
          ORG_ID: "https://relying-org.example",
          ISSUER: "https://countersign.test",
          SIGNING_KEY: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
          SIGNING_KID: "test-signing-1",
          LEGACY_HMAC_KEY: "0101010101010101010101010101010101010101010101010101010101010101",
          LEDGER_SHARD_KEY: "test-ledger-shard-key-0123456789abcdef",
          INTAKE_TOKEN: "test-intake-token",
        },
      },
    }),
  ],
  test: {
    include: ["test/workers/**/*.test.ts"],
    testTimeout: 30_000,
    // workerd has no file system: the external vectors are read here and handed to the tests.
    provide: { wycheproof: external("wycheproof/ed25519_test.json"), rfc8032: external("rfc8032/rfc8032-ed25519.json") },
  },
});
