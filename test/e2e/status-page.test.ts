/**
 * The status page in a real browser: Debian's headless Chromium (never one an npm install script
 * downloads) loads GET / of a locally started instance that has made a few decisions, takes a
 * screenshot, and the page shows the issuer, the codes and a chart with data in it, having
 * loaded nothing but the page itself and broken no Content-Security-Policy rule.
 *
 * Without the browser this test FAILS, loudly: install it with `apt-get install -y chromium`
 * (.ci/run does), or point CHROMIUM_PATH at a Chromium binary.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalServer, type LocalServer } from "../../scripts/local-server.js";
import { toHex } from "../../worker/protocol/encoding.js";
import { anchorFor, identity, makeReceipt } from "../../vectors/ccs/factory.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ADMIN = "e2e-status-admin-token";
const RP_TOKEN = "e2e-status-relying-party-token-0123456789";
const AUDIENCE = "https://relying-party.example";
const ISSUER = "https://status-e2e-issuer.example";
const LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const work = mkdtempSync(join(tmpdir(), "countersign-status-"));
/** STATUS_SCREENSHOT keeps the screenshot at that path; otherwise it goes with the temp dir. */
const screenshotPath = process.env.STATUS_SCREENSHOT ?? join(work, "status.png");
let server: LocalServer | undefined;
let browser: Browser | undefined;

const call = async (path: string, body: unknown, method: string, token: string) => {
  const res = await fetch(server!.url + path, { method, headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

describe("the status page in headless Chromium", () => {
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      const banner = `\n${"!".repeat(78)}\n!! NO BROWSER: ${CHROMIUM} does not exist, so the status-page browser test cannot run.\n!! Install Debian's chromium (apt-get update && apt-get install -y chromium) or set CHROMIUM_PATH.\n!! This is a FAILURE, not a skip.\n${"!".repeat(78)}\n`;
      console.error(banner);
      throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium package (apt-get install -y chromium) or set CHROMIUM_PATH`);
    }
    // Every decision is flushed at once, so the page shows them without waiting out the 10 s batch.
    server = await startLocalServer({ persistTo: join(work, "state"), vars: { ADMIN_TOKEN: ADMIN, DECISION_FLUSH_MS: "0" } });
    const label = `status-e2e-${toHex(crypto.getRandomValues(new Uint8Array(8)))}`;
    const id = await identity(label, ISSUER, "status-1");
    expect((await call("/v1/admin/anchors", anchorFor(id), "PUT", ADMIN)).status).toBe(200);
    expect((await call("/v1/admin/relying-parties", { name: "status-e2e", audiences: [AUDIENCE], token: RP_TOKEN }, "POST", ADMIN)).status).toBe(201);
    const now = Math.floor(Date.now() / 1000);
    const receipt = (n: number, verdict: "allow" | "deny") => makeReceipt(id, { label: `${label}/${n}`, audience: AUDIENCE, issuedAt: now, sequence: n, lifetime: 300, verdict });
    const allow = await receipt(1, "allow");
    const deny = await receipt(2, "deny");
    const decide = (r: typeof allow) => call("/v1/receipts/verify", { receipt: r.receipt, audience: AUDIENCE, request: r.request }, "POST", RP_TOKEN);
    expect((await decide(allow)).body.decision).toBe("accept");
    expect((await decide(allow)).body.failures[0].code).toBe("REPLAY_DETECTED");
    expect((await decide(deny)).body.decision).toBe("reject");
    // The flushes run after each answer: wait until DecisionStats holds all three.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const stats = await fetch(`${server.url}/v1/admin/stats?minutes=5`, { headers: { authorization: `Bearer ${ADMIN}` } }).then((r) => r.json() as Promise<any>);
      const mine = stats.totals?.[ISSUER] ?? {};
      if (mine.ACCEPTED === 1 && mine.REPLAY_DETECTED === 1 && mine.DENIED === 1) break;
      if (Date.now() > deadline) throw new Error(`decision counts never reached DecisionStats: ${JSON.stringify(stats.totals)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("renders the issuer, the codes and a chart with data, loads nothing else and breaks no CSP rule; the screenshot is a real PNG", async () => {
    const page = await browser!.newPage({ viewport: { width: 1100, height: 900 } });
    const requests: string[] = [];
    const problems: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(String(e)));
    const res = await page.goto(`${server!.url}/`, { waitUntil: "load" });
    expect(res?.status()).toBe(200);
    await page.screenshot({ path: screenshotPath, fullPage: true });

    const text = await page.locator("body").innerText();
    expect(text).toContain("countersign status");
    expect(text).toContain(ISSUER);
    for (const code of ["ACCEPTED", "DENIED", "REPLAY_DETECTED"]) expect(text).toContain(code);
    // A published manifest lists its profiles; an instance without a signing identity says it publishes none.
    expect(text).toMatch(/ccs\/1\.3\/receipt-verification|No capability manifest/);
    const chart = page.locator("svg").first();
    await expect(chart.isVisible()).resolves.toBe(true);
    expect(await chart.locator('g[data-series="ACCEPTED"]').getAttribute("data-total")).toBe("1");
    expect(await chart.locator("g[data-series] rect").count()).toBeGreaterThanOrEqual(3);
    expect(await page.locator("svg").nth(1).locator(`g[data-series="${ISSUER}"]`).getAttribute("data-total")).toBe("3");
    const box = await chart.boundingBox();
    expect(box!.width).toBeGreaterThan(300);

    expect(requests).toEqual([`${server!.url}/`]);
    expect(problems).toEqual([]);

    const png = readFileSync(screenshotPath);
    expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect(png.readUInt32BE(16)).toBe(1100);
    expect(png.readUInt32BE(20)).toBeGreaterThan(600);
    expect(png.length).toBeGreaterThan(20_000);
  });
});
