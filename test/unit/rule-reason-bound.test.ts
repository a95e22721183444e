/**
 * A rule's reason may quote what the rule found, and the receipt (its block_reason and the rules'
 * reasons) must fit the journal's record of 32 KB: a read_file of `/tmp/../etc/` and 40,000 letters
 * was denied with a 40 KB reason and answered 500 with no receipt, as was a fetch_url of a 40 KB
 * `a.a.….localhost` host (review rv-54). Each reason is now cut to MAX_REASON_LENGTH.
 */
import { describe, expect, it } from "vitest";
import { boundedReason, INPUT_RULES, judge, MAX_REASON_LENGTH } from "../../worker/protocol/issuing/rules/index.js";

const HASH = "sha256:" + "a".repeat(64);
const judged = (tool: string, params: Record<string, unknown>) =>
  judge(INPUT_RULES as never, { command: { intake_version: "1.3", agent_id: "a", tool, params, timestamp: 1, trace_id: "0123456789abcdef" }, requestHash: HASH, humanApproval: null, configHash: HASH, pinnedConfigHashes: null } as never);

describe("a rule's reason is bounded", () => {
  it("cuts a reason that quotes a long target or host, keeping the verdict", async () => {
    const sec004 = (await judged("read_file", { path: "/tmp/../etc/" + "a".repeat(40_000) })).find((r) => r.name === "SEC-004")!;
    expect(sec004.verdict).toBe("deny");
    expect(sec004.reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    expect(sec004.reason).toMatch(/^SEC-004: path traversal reaches \/etc\/a+…$/);
    const sec001 = (await judged("fetch_url", { url: "http://" + "a.".repeat(20_000) + "localhost/" })).find((r) => r.name === "SEC-001")!;
    expect(sec001.verdict).toBe("deny");
    expect(sec001.reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
  });

  it("leaves a short reason as it is and never cuts a surrogate pair in two", () => {
    expect(boundedReason("SEC-004: path traversal reaches /etc/shadow")).toBe("SEC-004: path traversal reaches /etc/shadow");
    const cut = boundedReason("x".repeat(MAX_REASON_LENGTH - 2) + "😀".repeat(10));
    expect(cut.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    expect(cut.endsWith("…")).toBe(true);
    expect(/[\ud800-\udbff]…$/.test(cut)).toBe(false);
  });
});
