import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { ROOT } from "../support/paths.js";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { generateAll } from "../../vectors/ccs/generate.js";
import { FAILURE_CODES } from "../../worker/protocol/codes.js";
import { ccsVectors, mismatches, propagationVectors, rawBodyOf, vectorParty, type Answer } from "../support/vectors.js";
import { nodeEnv } from "../../cli/offline-env.js";
import { RP_NAME, RP_TOKEN } from "../support/app-harness.js";

/** Failure codes no stateless vector can produce, and the test file that produces each. */
const CODES_PROVEN_BY_TESTS: Record<string, string> = {
  VERIFIER_REVIEW_REQUIRED: "test/workers/conformance.test.ts",
  // Only a revocation of a key a delegation of this deployment rests on withdraws a receipt.
  RECEIPT_WITHDRAWN: "test/workers/revocation.test.ts",
};

describe("CCS vectors", () => {
  it("are exactly what the generator produces from its fixed seeds", async () => {
    for (const { path, text } of await generateAll()) expect(text, path).toBe(readFileSync(path, "utf8"));
  });

  it("cover every failure code", () => {
    const codes = new Set([
      ...ccsVectors.vectors.flatMap((v) => v.calls.flatMap((c) => c.expect.codes)),
      ...propagationVectors.envelopes.flatMap((v) => v.calls.flatMap((c) => c.expect.codes)),
      ...propagationVectors.chains.flatMap((v) => v.expect.failures.map((f) => f.split(":")[1])),
    ]);
    // A code only deployment state can produce (lifetime decision counters) is proven by a named test instead.
    for (const [code, file] of Object.entries(CODES_PROVEN_BY_TESTS)) {
      expect(readFileSync(resolve(ROOT, file), "utf8"), `${file} produces ${code}`).toContain(code);
      codes.add(code);
    }
    expect([...codes].sort()).toEqual([...FAILURE_CODES].sort());
  });
});

describe("CCS vectors through the app under plain Node (noble Ed25519, in-memory ledger)", () => {
  const { env, ledgerStub, ctx } = nodeEnv({ ...ccsVectors.secrets });
  const app = createApp({ now: () => ccsVectors.now, verifier: nobleVerifier, ledgerStub });
  const call = (path: string, init: RequestInit) => app.request(path, init, env, ctx);
  const admin = { authorization: "Bearer test-admin-token", "content-type": "application/json" };

  beforeAll(async () => {
    const party = { name: RP_NAME, audiences: [ccsVectors.audience], token: RP_TOKEN };
    expect((await call("/v1/admin/relying-parties", { method: "POST", headers: admin, body: JSON.stringify(party) })).status).toBe(201);
    for (const anchor of ccsVectors.anchors) {
      expect((await call("/v1/admin/anchors", { method: "PUT", headers: admin, body: JSON.stringify(anchor) })).status).toBe(200);
    }
    for (const pin of ccsVectors.manifests) {
      expect((await call("/v1/admin/manifests", { method: "PUT", headers: admin, body: JSON.stringify(pin) })).status).toBe(200);
    }
  });

  for (const vector of ccsVectors.vectors) {
    it(`${vector.id}: ${vector.title}`, async () => {
      for (const r of "setup" in vector ? vector.setup!.revoke : []) {
        expect((await call("/v1/admin/anchors/revoke", { method: "POST", headers: admin, body: JSON.stringify(r) })).status).toBe(200);
      }
      const party = vectorParty(vector);
      if (party) expect((await call("/v1/admin/relying-parties", { method: "POST", headers: admin, body: JSON.stringify({ ...party, audiences: [ccsVectors.audience] }) })).status).toBe(201);
      for (const c of vector.calls) {
        const res = await call("/v1/receipts/verify", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${party?.token ?? RP_TOKEN}` }, body: rawBodyOf(c) });
        expect(mismatches(c, { status: res.status, body: await res.json() } as Answer)).toEqual([]);
      }
    });
  }
});
