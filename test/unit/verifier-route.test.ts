/**
 * GET /v1/verifiers/{id}/manifest was routed by the pattern `/verifiers/:verifier_id{.+}/manifest`.
 * Hono's trie router, which this app's routes select, queues a node per slash that `.+` spans and
 * shifts that queue once a path segment: a 16 KB path of slashes ending in `/manifest` cost 5 s of
 * CPU before any handler ran. The route is now a wildcard whose handler reads the id itself: the
 * same id for every path the pattern matched, no route for every path it did not, in linear time.
 */
import { Hono } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { getPath, tryDecodeURIComponent } from "hono/utils/url";
import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { verifierIdOfPath } from "../../worker/routes/manifests.js";
import { nodeEnv } from "../../cli/offline-env.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { seeded } from "../support/seeded.js";

const { next } = seeded(29);
const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)];

describe("the verifier manifest route", () => {
  it("names the id the old pattern named, and no route where it named none (20,000 seeded random paths)", async () => {
    const old = new Hono({ router: new TrieRouter() });
    old.route("/v1", new Hono().get("/verifiers/:verifier_id{.+}/manifest", (c) => c.json({ id: c.req.param("verifier_id") })));
    const pieces = ["a", "/", "/", "manifest", "/manifest", "manifestx", "%2F", "%0A", "%0D", "%E2%80%A8", "%25", "%", "https:", ".", "verifiers", "?q", "#f", "%3F"];
    for (let i = 0; i < 20_000; i++) {
      const tail = Array.from({ length: Math.floor(next() * 8) }, () => pick(pieces)).join("");
      const url = `http://x/v1/verifiers/${tail}`;
      const res = await old.request(url);
      const want = res.status === 200 ? ((await res.json()) as { id: string }).id : null;
      // The path as the router and c.req.path read it; the id decoded as c.req.param decoded it.
      const raw = verifierIdOfPath(getPath(new Request(url)));
      expect(raw === null ? null : tryDecodeURIComponent(raw), url).toBe(want);
    }
  });

  it("answers a 16 KB path of slashes at once (5.2 s before)", async () => {
    const { env, ledgerStub, ctx } = nodeEnv({ ADMIN_TOKEN: "t".repeat(40), AUDIENCES: "https://a.example" });
    const app = createApp({ now: () => 1796000000, verifier: nobleVerifier, ledgerStub, logLine: () => {}, exporter: () => {} });
    const res = await app.request(`http://x/v1/verifiers/a${"/".repeat(16_000)}/manifest`, {}, env, ctx);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("MALFORMED_REQUEST");
    expect((await app.request(`http://x/v1/verifiers/a${"/".repeat(16_000)}/x`, {}, env, ctx)).status).toBe(404);
  });
});
