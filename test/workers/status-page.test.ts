/**
 * GET / in workerd with real KV and Durable Objects: a self-contained page (nothing loads from
 * anywhere, no script), public figures only, every string escaped, the decision chart drawn
 * from DecisionStats, nonces held per issuer and live chains counted.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { sha256 } from "../../worker/protocol/digest.js";
import { identity } from "../../vectors/ccs/factory.js";
import { AUDIENCE, harness, issuerFor, RP_NAME, RP_TOKEN } from "../support/app-harness.js";

const EVIL_ISSUER = `https://evil.example/"><script>alert(1)</script>`;
const EVIL_ORG = `https://org.example/<img/src=x/onerror=alert(2)>&'`;

async function setUp() {
  const ctx = createExecutionContext();
  const h = harness(env, ctx, { decisionFlush: { everyMs: 0, everyDecisions: 1 } });
  const issuer = await issuerFor("status-page");
  await h.pin(issuer.anchor);
  const accepted = await issuer.body();
  expect((await h.verify(accepted)).body.decision).toBe("accept");
  expect((await h.verify(accepted)).body.failures[0].code).toBe("REPLAY_DETECTED");
  expect((await h.verify(await issuer.body({ verdict: "deny" }))).body).toMatchObject({ valid: true, decision: "reject" });
  const evil = await identity("status-page/evil", EVIL_ISSUER, "evil-1");
  expect((await h.pin({ issuer: EVIL_ISSUER, org_id: EVIL_ORG, keys: [{ kid: evil.kid, alg: "Ed25519", public_key: evil.publicKey }] })).status).toBe(200);
  const { receipt } = await issuer.receipt();
  const hop = await h.call("/v1/chains/status-chain/hops", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ entry: { hop_count: 0, receipt } }) });
  expect(hop.status, hop.text).toBe(200);
  await waitOnExecutionContext(ctx);
  const page = await h.call("/");
  return { page, issuer };
}

describe("GET /, the status page", () => {
  let fixture: Awaited<ReturnType<typeof setUp>>;
  beforeAll(async () => {
    fixture = await setUp();
  });

  it("is self-contained: a strict CSP, no script, nothing loaded from elsewhere, the one style block allowed by its hash", async () => {
    const { page } = fixture;
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.text).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i);
    expect(page.text).not.toMatch(/\s(src|href|xlink:href)\s*=/i);
    const styles = [...page.text.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
    expect(styles).toHaveLength(1);
    const hash = btoa(String.fromCharCode(...(await sha256(styles[0]))));
    expect(csp).toContain(`style-src 'sha256-${hash}'`);
    expect(page.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("escapes every string it renders: an admin-pinned issuer and org shaped as markup stay text", async () => {
    const { page } = fixture;
    expect(page.text).not.toContain("<script>alert(1)");
    expect(page.text).not.toContain("<img/src");
    expect(page.text).toContain("https://evil.example/&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;");
    expect(page.text).toContain("https://org.example/&#60;img/src=x/onerror=alert(2)&#62;&#38;&#39;");
  });

  it("shows pinned issuers with their keys and nonces held, decisions per code and per issuer as an SVG chart, and live chains", async () => {
    const { page, issuer } = fixture;
    const key = issuer.anchor.keys[0];
    expect(page.text).toContain(issuer.id.issuer);
    expect(page.text).toMatch(/<h2>Usage and cost evidence<\/h2>[\s\S]*usage receipts<\/th><td class="num">0</);
    expect(page.text).toContain(`<code>${key.kid}</code>`);
    const fingerprint = [...(await sha256(Uint8Array.from(atob(key.public_key.replace(/-/g, "+").replace(/_/g, "/")), (ch) => ch.charCodeAt(0))))]
      .map((b) => b.toString(16).padStart(2, "0")).join("").slice(0, 16);
    expect(page.text).toContain(fingerprint);
    // Three nonces consumed: the accept, the deny and the chain's hop 0; the replay consumed nothing.
    expect(page.text).toMatch(new RegExp(`${issuer.id.issuer}[\\s\\S]*?<td class="num" rowspan="1">3</td>`));
    const svgs = page.text.match(/<svg[\s\S]*?<\/svg>/g)!;
    expect(svgs).toHaveLength(2);
    expect(svgs[0]).toContain('data-series="ACCEPTED" data-total="1"');
    expect(svgs[0]).toContain('data-series="DENIED" data-total="1"');
    expect(svgs[0]).toContain('data-series="REPLAY_DETECTED" data-total="1"');
    expect(svgs[1]).toContain(`data-series="${issuer.id.issuer}" data-total="3"`);
    expect(page.text).toMatch(/<span class="big">1<\/span> live chains/);
    expect(page.text).toContain("<code>ccs/1.3/evidence-chain</code>");
    expect(page.text).toContain("GET /.well-known/ccs-manifest");
    expect(page.text).toContain("first 50 pinned issuers");
  });

  it("shows nothing private: no relying-party name, token or audience, no receipt content", async () => {
    const { page, issuer } = fixture;
    const { receipt } = await issuer.receipt();
    for (const secret of [RP_NAME, RP_TOKEN, AUDIENCE, "test-admin-token", receipt.signature.slice(0, 32), "payments.transfer"]) expect(page.text).not.toContain(secret);
  });

  it("needs no token, and answers the same page from this isolate for a few seconds", async () => {
    const h = harness(env, createExecutionContext());
    const first = await h.call("/", { headers: { authorization: "" } });
    expect(first.status).toBe(200);
    expect((await h.call("/")).text).toBe(first.text);
  });
});

describe("GET / under concurrent callers", () => {
  it("renders once per reuse window: callers arriving while a stale page is re-rendered get the last page, not a render each", async () => {
    // The anchor store's listing is read once per render: counting it counts renders.
    let listings = 0;
    const kv = env.ANCHORS;
    const counted = {
      ...env,
      ANCHORS: {
        get: (...a: Parameters<KVNamespace["get"]>) => kv.get(...a),
        getWithMetadata: (...a: Parameters<KVNamespace["getWithMetadata"]>) => kv.getWithMetadata(...a),
        put: (...a: Parameters<KVNamespace["put"]>) => kv.put(...a),
        delete: (...a: Parameters<KVNamespace["delete"]>) => kv.delete(...a),
        list: (...a: Parameters<KVNamespace["list"]>) => {
          if (a[0]?.prefix === "anchor:") listings++;
          return kv.list(...a);
        },
      } as unknown as KVNamespace,
    } as typeof env;
    const h = harness(counted, createExecutionContext());
    const clock = vi.spyOn(Date, "now");
    try {
      const t0 = 2_000_000_000_000;
      clock.mockReturnValue(t0);
      expect((await h.call("/")).status).toBe(200);
      expect(listings).toBe(1);
      // The page is stale: twenty callers at once.
      clock.mockReturnValue(t0 + 11_000);
      const answers = await Promise.all(Array.from({ length: 20 }, () => h.call("/")));
      expect(answers.map((a) => a.status)).toEqual(new Array(20).fill(200));
      expect(listings).toBe(2);
    } finally {
      clock.mockRestore();
    }
  });
});

describe("the capability manifest section, when there is none to show", () => {
  it("a broken manifest configuration is said to be one, not passed off as no signing identity; the routes that show the manifest answer SERVICE_MISCONFIGURED", async () => {
    const broken = { ...env, MANIFEST_TTL: "100" } as typeof env;
    const h = harness(broken, createExecutionContext());
    const page = await h.call("/");
    expect(page.status).toBe(200);
    expect(page.text).not.toContain("no signing identity configured");
    expect(page.text).toContain("The capability manifest could not be built");
    for (const path of ["/.well-known/ccs-manifest", `/v1/verifiers/${encodeURIComponent(env.ISSUER!)}/manifest`]) {
      const r = await h.call(path);
      expect([path, r.status, r.body?.error?.code]).toEqual([path, 500, "SERVICE_MISCONFIGURED"]);
    }
    const resolved = await h.call("/v1/profiles/resolve", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ profile: "ccs/1.3/intake" }) });
    expect([resolved.status, resolved.body?.error?.code]).toEqual([500, "SERVICE_MISCONFIGURED"]);
  });

  it("a deployment without a signing identity says it publishes none", async () => {
    const h = harness({ ...env, SIGNING_KEY: "" } as typeof env, createExecutionContext());
    const page = await h.call("/");
    expect(page.status).toBe(200);
    expect(page.text).toContain("this deployment has no signing identity configured, so it publishes none");
  });
});

describe("the 13.7 review flag on the status page", () => {
  it("names a flagged issuer even when it is past the issuers the page lists", async () => {
    // Review rv-118: the flag was drawn only in the listed issuers' rows (the first 50 in key
    // order), so an issuer flagged for review past them was nowhere on the page.
    const ctx = createExecutionContext();
    const h = harness(env, ctx, { reviewThreshold: 3, decisionFlush: { everyMs: 0, everyDecisions: 1 } });
    for (let n = 0; n < 50; n++) {
      const id = await identity(`status-review/listed-${n}`, `https://aa-status-listed-${String(n).padStart(2, "0")}.example`, "k1");
      expect((await h.pin({ issuer: id.issuer, org_id: null, keys: [{ kid: id.kid, alg: "Ed25519", public_key: id.publicKey }] })).status).toBe(200);
    }
    const flagged = await issuerFor("zz-status-review-flagged");
    await h.pin(flagged.anchor);
    for (let i = 0; i < 3; i++) expect((await h.verify(await flagged.body())).body.decision).toBe("accept");
    await waitOnExecutionContext(ctx);
    expect((await h.call(`/v1/issuers/${encodeURIComponent(flagged.id.issuer)}`)).body.review).toMatchObject({ flagged: true });
    const page = (await harness(env, createExecutionContext(), { reviewThreshold: 3 }).call("/")).text;
    expect(page).toContain("more are pinned and not shown");
    expect(page).toMatch(new RegExp(`review required: allow-only</span> \\(CCS 13\\.7\\), pinned and not in the table below: <code>${flagged.id.issuer.replace(/[.]/g, "\\.")}</code>`));
  });
});
