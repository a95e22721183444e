/** The challenge loop's pure rules: the derived, capped deadline and which gaps are challenged. */
import { describe, expect, it } from "vitest";
import { challengeDeadline, evidenceGaps, evidenceProblem } from "../../worker/protocol/issuing/challenge.js";
import { parseIntake } from "../../worker/protocol/issuing/command.js";

const intake = (extra: Record<string, unknown> = {}) =>
  parseIntake({ intake_version: "1.3", agent_id: "a", tool: "drop_table", params: { table: "t" }, timestamp: 1796000000, trace_id: "00000000000000c1", ...extra });
const r = (name: string, verdict: "allow" | "deny" | "escalate") => ({ name, verdict, reason: verdict === "allow" ? "" : "why" });

describe("the challenge loop, pure", () => {
  it("expires_at = issued_at + min(base_duration × deadline_multiplier, max_deadline)", () => {
    expect(challengeDeadline(1796000000.5, { base_duration: 60, deadline_multiplier: 5, max_deadline: 600 })).toBe(1796000300.5);
    expect(challengeDeadline(1796000000, { base_duration: 60, deadline_multiplier: 20, max_deadline: 600 })).toBe(1796000600);
  });

  it("challenges SEC-005's missing approval and a required server profile, and nothing when a check denies on its own", () => {
    const config = { policy_floor: "tls" as const, server_profile_required: true };
    expect(evidenceGaps(intake(), [r("SEC-005", "escalate")], "sha256:" + "a".repeat(64), config).map((g) => g.evidence)).toEqual(["human_approval", "server_profile"]);
    expect(evidenceGaps(intake({ server_profile: "tls" }), [r("SEC-005", "allow")], "sha256:" + "a".repeat(64), config)).toEqual([]);
    expect(evidenceGaps(intake(), [r("SEC-005", "escalate"), r("SEC-001", "deny")], "sha256:" + "a".repeat(64), config)).toEqual([]);
    expect(evidenceGaps(intake(), [r("SEC-005", "allow")], "sha256:" + "a".repeat(64), { policy_floor: "tls" })).toEqual([]);
  });

  it("an answer may carry only what the challenge asked for", () => {
    const gaps = evidenceGaps(intake(), [r("SEC-005", "escalate")], "sha256:" + "a".repeat(64), { policy_floor: "tls" });
    expect(evidenceProblem({ human_approval: {} }, gaps)).toBeNull();
    expect(evidenceProblem({ server_profile: "tls" }, gaps)).toMatch(/did not ask/);
    expect(evidenceProblem({}, gaps)).toMatch(/at least one/);
  });
});
