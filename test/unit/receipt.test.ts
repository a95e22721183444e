import { describe, expect, it } from "vitest";
import { jcs } from "../../worker/protocol/digest.js";
import { canonicalReceipt, parseReceipt, RECEIPT_FIELDS } from "../../worker/protocol/receipt.js";
import { checkFreshness, DEFAULT_FRESHNESS } from "../../worker/protocol/checks/freshness.js";
import { mapOutcome } from "../../worker/protocol/checks/outcome.js";
import { admitSequence, EMPTY_WINDOW, WINDOW_SIZE } from "../../worker/protocol/replay-window.js";
import { identity, makeReceipt } from "../../vectors/ccs/factory.js";

const NOW = 1_800_000_000;
const fixture = async (label = "unit") => {
  const id = await identity("unit", "https://issuer.example", "k1");
  return makeReceipt(id, { label, audience: "https://rp.example", issuedAt: NOW, sequence: 1 });
};

describe("receipt schema and canonical form", () => {
  it("lists the 22 fields in RFC 8785 order", () => {
    expect(RECEIPT_FIELDS).toHaveLength(22);
    expect([...RECEIPT_FIELDS]).toEqual([...RECEIPT_FIELDS].sort());
  });

  it("computes the signed bytes and the receipt_hash input exactly as generic JCS does", async () => {
    const { receipt } = await fixture();
    const { signature, ...unsigned } = receipt;
    const c = canonicalReceipt(receipt);
    expect(new TextDecoder().decode(c.signedBytes)).toBe(jcs(unsigned));
    expect(c.fullText).toBe(jcs(receipt));
    expect(signature).toMatch(/^[0-9a-f]{128}$/);
  });

  it("canonicalises escapes and non-ASCII tools as JCS does", async () => {
    const id = await identity("unit", "https://issuer.example", "k1");
    const { receipt } = await makeReceipt(id, { label: "esc", audience: "https://rp.example", issuedAt: NOW + 0.5, sequence: 2, tool: 'wëird"tool\n😀' });
    expect(canonicalReceipt(receipt).fullText).toBe(jcs(receipt));
  });

  it("accepts a well-formed receipt and refuses each malformation with MALFORMED_RECEIPT", async () => {
    const { receipt } = await fixture();
    expect(parseReceipt(receipt).ok).toBe(true);
    const bad: Record<string, unknown>[] = [
      { ...receipt, outcome_status: "confirmed" },
      { ...receipt, trace_id: "ABCDEF0123456789" },
      { ...receipt, verdict: "maybe" },
      { ...receipt, sequence: -1 },
      { ...receipt, sequence: 1.5 },
      { ...receipt, max_clock_skew: -1 },
      { ...receipt, issuer: "http://issuer.example" },
      { ...receipt, audience: "https://" },
      { ...receipt, response_hash: "sha256:abc" },
      { ...receipt, tool: "x".repeat(257) },
      { ...receipt, block_reason: "why" },
      { ...receipt, verdict: "deny" },
      { ...receipt, action: receipt.action.replace("payments.transfer", "other.tool") },
      { ...receipt, params_hash: "0000000000000000" },
      { ...receipt, expires_at: "NaN" },
    ];
    for (const r of bad) {
      const parsed = parseReceipt(r);
      expect(parsed.ok, JSON.stringify(r).slice(0, 80)).toBe(false);
      if (!parsed.ok) expect(new Set(parsed.failures.map((f) => f.code))).toEqual(new Set(["MALFORMED_RECEIPT"]));
    }
  });
});

describe("freshness (step 1)", () => {
  it("accepts within skew at both edges and refuses just beyond", async () => {
    const { receipt } = await fixture();
    const skew = Math.min(receipt.max_clock_skew, DEFAULT_FRESHNESS.skewCap);
    expect(checkFreshness(receipt, receipt.issued_at - skew, DEFAULT_FRESHNESS)).toEqual([]);
    expect(checkFreshness(receipt, receipt.expires_at + skew, DEFAULT_FRESHNESS)).toEqual([]);
    expect(checkFreshness(receipt, receipt.issued_at - skew - 0.001, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
    expect(checkFreshness(receipt, receipt.expires_at + skew + 0.001, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
  });

  it("caps the receipt's own skew at the policy cap", async () => {
    const { receipt } = await fixture();
    const generous = { ...receipt, max_clock_skew: 3600 };
    expect(checkFreshness(generous, receipt.expires_at + 31, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
    expect(checkFreshness(generous, receipt.expires_at + 30, DEFAULT_FRESHNESS)).toEqual([]);
  });

  it("refuses a non-positive or over-long lifetime", async () => {
    const { receipt } = await fixture();
    expect(checkFreshness({ ...receipt, expires_at: receipt.issued_at }, NOW, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
    expect(checkFreshness({ ...receipt, expires_at: receipt.issued_at + 301 }, NOW, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
  });
});

describe("outcome mapping (step 6)", () => {
  it("maps verdict and outcome to the enforcement action", async () => {
    const { receipt } = await fixture();
    expect(mapOutcome(receipt, true).enforcement.action).toBe("proceed_pending_reconciliation");
    expect(mapOutcome({ ...receipt, response_hash: "sha256:" + "1".repeat(64) }, true).enforcement).toMatchObject({ action: "proceed", outcome_status: "confirmed" });
    expect(mapOutcome({ ...receipt, verdict: "deny" }, true).enforcement).toMatchObject({ action: "block", outcome_status: "confirmed" });
    expect(mapOutcome({ ...receipt, verdict: "escalate" }, true, "unknown").enforcement.action).toBe("defer");
    const indeterminate = mapOutcome(receipt, true, "indeterminate");
    expect(indeterminate.enforcement.action).toBe("conservative");
    expect(indeterminate.warnings.map((w) => [w.code, w.severity])).toEqual([["OUTCOME_INDETERMINATE", "WARNING"]]);
    expect(mapOutcome(receipt, false).enforcement.action).toBe("block");
  });
});

describe("sequence window", () => {
  it("admits new sequences, refuses repeats and those older than the window", () => {
    let w = EMPTY_WINDOW;
    for (const s of [10, 12, 11, 2000, 1500]) {
      const r = admitSequence(w, s);
      expect(r.kind).toBe("fresh");
      if (r.kind === "fresh") w = r.next;
    }
    expect(admitSequence(w, 1500).kind).toBe("repeated");
    expect(admitSequence(w, 2000).kind).toBe("repeated");
    expect(admitSequence(w, 2000 - WINDOW_SIZE).kind).toBe("too_old");
    expect(admitSequence(w, 2000 - WINDOW_SIZE + 1).kind).toBe("fresh");
    expect(admitSequence(w, Number.MAX_SAFE_INTEGER).kind).toBe("fresh");
  });
});

describe("ledger shards", () => {
  it("names the issuer itself with one shard, and a stable issuer#k with several", async () => {
    const { ledgerName, ledgerNames } = await import("../../worker/protocol/ledger.js");
    expect(ledgerName("https://i.example", "ab".repeat(16), 1)).toBe("https://i.example");
    expect(ledgerNames("https://i.example", 1)).toEqual(["https://i.example"]);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const name = ledgerName("https://i.example", i.toString(16).padStart(32, "0"), 4);
      expect(ledgerName("https://i.example", i.toString(16).padStart(32, "0"), 4)).toBe(name);
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(ledgerNames("https://i.example", 4).sort());
    for (const n of counts.values()) expect(n).toBeGreaterThan(700);
  });
});
