/** The status page renderer under plain Node: escaping, the chart's scale, sections that did not answer. */
import { describe, expect, it } from "vitest";
import { niceCeiling, stackedBarChart } from "../../worker/status-page/chart.js";
import { renderStatusPage, type StatusView } from "../../worker/status-page/render.js";

const view = (over: Partial<StatusView> = {}): StatusView => ({
  generatedAt: 1_900_000_000,
  self: null,
  issuers: [],
  issuerLimit: 50,
  moreIssuers: false,
  shardBudget: 200,
  series: null,
  liveChains: 0,
  labelLimit: 8,
  refreshSeconds: 10,
  ...over,
});

describe("the status page renderer", () => {
  it("escapes every string, whatever field it arrives in", () => {
    const evil = `"'><script>alert(1)</script>&`;
    const html = renderStatusPage(view({
      self: `https://self.example/${evil}`,
      issuers: [{ issuer: `https://i.example/${evil}`, org_id: `https://o.example/${evil}`, ledger_shards: 1, nonces: 3, keys: [{ kid: evil, fingerprint: `${evil}0123456789`, not_before: null, not_after: null, revoked: false }] }],
      series: { from: 1_900_000_000, minutes: 2, byCode: { [evil]: [1, 2] }, byLabel: { [evil]: [1, 2] }, labelsFolded: 0 },
    }));
    expect(html).not.toContain("<script>");
    expect(html).not.toContain(`"'>`);
    expect(html.match(/&#34;&#39;&#62;&#60;script&#62;/g)!.length).toBeGreaterThanOrEqual(6);
  });

  it("says so when a dependency did not answer, instead of failing the page", () => {
    const html = renderStatusPage(view({ issuers: null, series: null, liveChains: null }));
    expect(html).toContain("pinned issuers are unavailable");
    expect(html).toContain("decision counts are unavailable");
    expect(html).toMatch(/<span class="big">unavailable<\/span>/);
  });

  it("shows usage receipts by attribution, estimates and reconciliations, counts only", () => {
    const usage = { receipts: 3, attribution: { attributed: 2, partial: 1 }, estimates: { estimated: 2 }, reconciliation: { reconciled: 1, none: 2 }, parties: 2, moreParties: false };
    const html = renderStatusPage(view({ usage, usagePartyLimit: 50 }));
    expect(html).toContain("Usage and cost evidence");
    expect(html).toMatch(/usage receipts<\/th><td class="num">3</);
    expect(html).toContain("<code>attributed</code> 2, <code>partial</code> 1");
    expect(html).toContain("<code>none</code> 2, <code>reconciled</code> 1");
    expect(renderStatusPage(view({ usage: null }))).toContain("the usage ledgers did not answer");
  });

  it("says when counts arrive as the counter sends them: with a decision, so a quiet isolate's wait for its next one", () => {
    const html = renderStatusPage(view({ series: { minutes: 60, from: 1_900_000_000 - 3540, to: 1_900_000_000, byCode: {}, byLabel: {}, labelsFolded: 0 } as unknown as StatusView["series"] }));
    expect(html).toContain("sends its last counts with its next decision");
    expect(html).toContain("under the minute it was counted in");
    expect(html).not.toContain("within the flush interval");
  });

  it("renders a key bound past what a Date holds (a pin accepts any safe integer) instead of failing the page", () => {
    const far = 9_000_000_000_000; // seconds: past year 275760, where new Date(...).toISOString() throws
    const html = renderStatusPage(view({ issuers: [{ issuer: "https://far.example", org_id: null, ledger_shards: 1, nonces: 0, keys: [{ kid: "far1", fingerprint: "f".repeat(64), not_before: -far, not_after: far, revoked: false }] }] }));
    expect(html).toContain(`<td>${far} (Unix seconds)</td>`);
    expect(html).toContain(`<td>${-far} (Unix seconds)</td>`);
  });

  it("says when more issuers are pinned than listed", () => {
    expect(renderStatusPage(view({ issuers: [{ issuer: "https://a.example", org_id: null, ledger_shards: 1, nonces: null, keys: [] }], moreIssuers: true }))).toContain("more are pinned and not shown");
  });

  it("scales the chart to a round ceiling of the stacked totals and draws a segment per non-zero count", () => {
    expect([0, 1, 2, 3, 7, 10, 11, 240].map(niceCeiling)).toEqual([1, 1, 2, 5, 10, 10, 20, 500]);
    const svg = stackedBarChart({ title: "t", from: 0, series: [{ name: "A", points: [0, 3, 1] }, { name: "B", points: [0, 2, 0] }] });
    expect(svg.match(/<g data-series/g)).toHaveLength(2);
    expect(svg).toContain('data-series="A" data-total="4"');
    expect(svg.match(/<rect/g)).toHaveLength(3);
    // The busiest minute stacks to 5, the axis ceiling: its top segment reaches the top of the plot.
    expect(svg).toContain('>5</text>');
    expect(svg).toMatch(/<rect x="[\d.]+" y="12.0"/);
  });
});
