import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { harness } from "../support/app-harness.js";
import { ccsVectors, mismatches, rawBodyOf, vectorParty } from "../support/vectors.js";

describe("CCS vectors through POST /v1/receipts/verify in workerd (WebCrypto, KV, IssuerLedger)", () => {
  const h = harness(env, createExecutionContext(), { now: () => ccsVectors.now });

  beforeAll(async () => {
    for (const anchor of ccsVectors.anchors) expect((await h.pin(anchor)).status).toBe(200);
    for (const pin of ccsVectors.manifests) expect((await h.admin("PUT", "/v1/admin/manifests", pin)).status).toBe(200);
  });

  for (const vector of ccsVectors.vectors) {
    it(`${vector.id}: ${vector.title}`, async () => {
      for (const r of "setup" in vector ? vector.setup!.revoke : []) expect((await h.revoke(r.issuer, r.kid)).status).toBe(200);
      const party = vectorParty(vector);
      if (party) expect((await h.admin("POST", "/v1/admin/relying-parties", { ...party, audiences: [ccsVectors.audience] })).status).toBe(201);
      const headers = { "content-type": "application/json", ...(party ? { authorization: `Bearer ${party.token}` } : {}) };
      for (const c of vector.calls) expect(mismatches(c, await h.call("/v1/receipts/verify", { method: "POST", headers, body: rawBodyOf(c) }))).toEqual([]);
    });
  }
});
