import { describe, expect, it } from "vitest";
import { jcs } from "../../worker/protocol/digest.js";
import { canonicalReceipt, parseReceipt, RECEIPT_FIELDS } from "../../worker/protocol/receipt.js";
import { parseLevel0 } from "../../worker/protocol/conformance/level0.js";
import { checkFreshness, DEFAULT_FRESHNESS, grantedSkew } from "../../worker/protocol/checks/freshness.js";
import { checkBinding } from "../../worker/protocol/checks/binding.js";
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

describe("nonce", () => {
  it("is 32 to 128 lowercase hex digits: at least 128 bits as the profile asks, at most 512 as countersign bounds it", async () => {
    const { receipt } = await fixture();
    for (const n of [32, 33, 64, 128]) expect(parseReceipt({ ...receipt, nonce: "a".repeat(n) }).ok, String(n)).toBe(true);
    for (const nonce of ["a".repeat(31), "a".repeat(129), "A".repeat(32), "g".repeat(32), "", 12345678901234567890]) {
      expect(parseReceipt({ ...receipt, nonce }).ok, String(nonce)).toBe(false);
    }
  });
});

describe("issuer and audience", () => {
  it("a refused URI is told the whole form, not only its scheme and size (a space, no host, a control character, an uppercase scheme)", async () => {
    // Review rv-61: each answered 'must be an https:// URI of at most 256 UTF-8 bytes', which all of them are.
    const { receipt } = await fixture();
    for (const uri of ["https://a b.example", "https:///nohost", "https://x.example\u0085", "HTTPS://x.example", "https://x.example\\y"]) {
      for (const field of ["issuer", "audience"]) {
        const parsed = parseReceipt({ ...receipt, [field]: uri });
        expect(parsed.ok ? [] : parsed.failures.map((f) => [f.code, f.detail]), `${field} ${uri}`).toEqual([["MALFORMED_RECEIPT", `${field} must be an https:// URI naming a host (lowercase scheme; no whitespace, control character or "\\"), of at most 256 UTF-8 bytes`]]);
      }
    }
  });
});

describe("rule_summary", () => {
  it("is name=verdict entries whose verdict is a CCS rule verdict (allow, deny, escalate, lowercase); any other word is MALFORMED_RECEIPT", async () => {
    const { receipt } = await fixture();
    for (const summary of ["SEC-001=allow", "SEC-001=deny", "SEC-005=escalate", "SEC-001=allow|SEC-005=escalate|policy-floor=deny", "évidence rule=allow"]) {
      expect(parseReceipt({ ...receipt, rule_summary: summary }).ok, summary).toBe(true);
    }
    for (const summary of ["SEC-001=maybe", "SEC-001=ALLOW", "SEC-001=pass", "SEC-001=allow|SEC-004=skip", "SEC-001=allowed", "SEC-001=", "=allow", "SEC-001=allow|", "SEC-001", "SEC-001=allow=deny"]) {
      const parsed = parseReceipt({ ...receipt, rule_summary: summary });
      expect(parsed.ok, summary).toBe(false);
      if (!parsed.ok) expect(parsed.failures.map((f) => [f.code, f.detail])).toEqual([["MALFORMED_RECEIPT", 'rule_summary must be "name=verdict" entries joined by "|", each verdict allow, deny or escalate']]);
    }
  });

  it("holds the same form in a Level 0 receipt", () => {
    const level0 = { trace_id: "00000000000000aa", verdict: "allow", timestamp: NOW, tool: "search_web", params_hash: "0123456789abcdef", rule_summary: "SEC-001=allow", receipt: "1".repeat(32) };
    expect(parseLevel0(level0).ok).toBe(true);
    const parsed = parseLevel0({ ...level0, rule_summary: "SEC-001=maybe" });
    expect(parsed.ok ? [] : parsed.failures.map((f) => f.code)).toEqual(["MALFORMED_RECEIPT"]);
  });
});

describe("receipts without the SHOULD fields", () => {
  const should = ["sequence", "max_clock_skew", "response_hash", "runtime_context_hash"] as const;

  it("parse, and sign over exactly the 18 fields present (the canonical form is generic JCS of them)", async () => {
    const id = await identity("unit", "https://issuer.example", "k1");
    const { receipt } = await makeReceipt(id, { label: "minimal", audience: "https://rp.example", issuedAt: NOW, sequence: 1, omit: [...should] });
    expect(Object.keys(receipt)).toHaveLength(18);
    expect(parseReceipt(receipt).ok).toBe(true);
    const { signature: _s, ...unsigned } = receipt;
    expect(new TextDecoder().decode(canonicalReceipt(receipt).signedBytes)).toBe(jcs(unsigned));
    expect(canonicalReceipt(receipt).fullText).toBe(jcs(receipt));
  });

  it("take the draft's defaults: 30 s skew (under the cap), and an absent hash binds like \"\"", async () => {
    const id = await identity("unit", "https://issuer.example", "k1");
    const { receipt } = await makeReceipt(id, { label: "defaults", audience: "https://rp.example", issuedAt: NOW, sequence: 1, omit: [...should] });
    expect(grantedSkew(receipt, DEFAULT_FRESHNESS)).toBe(30);
    expect(grantedSkew(receipt, { ...DEFAULT_FRESHNESS, skewCap: 10 })).toBe(10);
    expect(checkFreshness(receipt, receipt.expires_at + 30, DEFAULT_FRESHNESS)).toEqual([]);
    expect((await checkBinding(receipt, { response: { ok: true } })).map((f) => f.code)).toEqual(["BINDING_MISMATCH"]);
    expect(mapOutcome(receipt, true).enforcement.outcome_status).toBe("dispatched");
  });

  it("still refuses a missing required field, an unknown field and a SHOULD field of the wrong form", async () => {
    const { receipt } = await fixture();
    const { nonce: _n, ...noNonce } = receipt;
    for (const r of [noNonce, { ...receipt, extra: 1 }, { ...receipt, sequence: null }, { ...receipt, response_hash: null }]) expect(parseReceipt(r).ok).toBe(false);
  });

  it("refuses an issuer or audience over 256 UTF-8 bytes", async () => {
    const { receipt } = await fixture();
    const at = (n: number) => `https://${"a".repeat(n - 16)}.example`;
    expect(at(256)).toHaveLength(256);
    expect(parseReceipt({ ...receipt, audience: at(256) }).ok).toBe(true);
    expect(parseReceipt({ ...receipt, audience: at(257) }).ok).toBe(false);
    expect(parseReceipt({ ...receipt, issuer: `https://${"é".repeat(124)}.example` }).ok).toBe(false);
  });

  it("refuses an issuer or audience with a control character, or that is not a URI with a host", async () => {
    const { receipt } = await fixture();
    for (const bad of ["https://x.example/\u0000", "https://x.example/a\u001fb", "https://x.example/\u007f", "https://a.example/\u0085x", "https://a.example/\u009f", "https://[not-a-uri", "https://", "https:///x.example", "https:////x.example/a", "https://\\x.example", "https://x.example\\@y.example"]) {
      expect(parseReceipt({ ...receipt, issuer: bad }).ok).toBe(false);
      expect(parseReceipt({ ...receipt, audience: bad }).ok).toBe(false);
    }
  });
});

describe("freshness (step 1)", () => {
  it("accepts within skew at both edges and refuses just beyond", async () => {
    const { receipt } = await fixture();
    const skew = Math.min(receipt.max_clock_skew!, DEFAULT_FRESHNESS.skewCap);
    expect(checkFreshness(receipt, receipt.issued_at - skew, DEFAULT_FRESHNESS)).toEqual([]);
    expect(checkFreshness(receipt, receipt.expires_at + skew, DEFAULT_FRESHNESS)).toEqual([]);
    expect(checkFreshness(receipt, receipt.issued_at - skew - 0.001, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
    expect(checkFreshness(receipt, receipt.expires_at + skew + 0.001, DEFAULT_FRESHNESS)[0].code).toBe("FRESHNESS_EXPIRED");
  });

  it("states how far out of its window a receipt is to the millisecond, without float noise", async () => {
    const { receipt } = await fixture();
    expect(checkFreshness(receipt, receipt.expires_at + 1101.4949998855, DEFAULT_FRESHNESS)[0].detail).toMatch(/^expired 1101\.495s ago/);
    expect(checkFreshness(receipt, receipt.issued_at - 100.1, DEFAULT_FRESHNESS)[0].detail).toMatch(/^issued_at is 100\.1s in the future/);
  });

  it("never prints the limit itself for a refusal: a span rounding to the limit reads 'over' it; a lifetime is printed to the millisecond", async () => {
    const { receipt } = await fixture();
    const skew = Math.min(receipt.max_clock_skew!, DEFAULT_FRESHNESS.skewCap);
    const future = checkFreshness(receipt, receipt.issued_at - skew - 0.0000002, DEFAULT_FRESHNESS);
    expect(future.map((f) => f.detail)).toEqual([`issued_at is over ${skew}s in the future (skew ${skew}s)`]);
    const late = checkFreshness(receipt, receipt.expires_at + skew + 0.0000002, DEFAULT_FRESHNESS);
    expect(late.map((f) => f.detail)).toEqual([`expired over ${skew}s ago (skew ${skew}s)`]);
    const t = 1796094714.1773;
    const long = checkFreshness({ ...receipt, issued_at: t, expires_at: t + 300.001 }, t, DEFAULT_FRESHNESS);
    expect(long.map((f) => f.detail)).toEqual(["lifetime 300.001s exceeds the policy maximum of 300s"]);
    const barely = checkFreshness({ ...receipt, issued_at: t, expires_at: t + 300.0000003 }, t, DEFAULT_FRESHNESS);
    expect(barely.map((f) => f.detail)).toEqual(["lifetime over 300s exceeds the policy maximum of 300s"]);
    expect(checkFreshness({ ...receipt, expires_at: receipt.issued_at + 301 }, NOW, DEFAULT_FRESHNESS)[0].detail).toBe("lifetime 301s exceeds the policy maximum of 300s");
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
  const key = new TextEncoder().encode("unit-test-shard-key-0123456789abcdef");
  const otherKey = new TextEncoder().encode("another-shard-key-0123456789abcdef!");

  it("names the issuer itself with one shard, and a stable issuer#k with several", async () => {
    const { ledgerName, ledgerNames } = await import("../../worker/protocol/ledger.js");
    expect(ledgerName("https://i.example", "ab".repeat(16), 1, key)).toBe("https://i.example");
    expect(ledgerNames("https://i.example", 1)).toEqual(["https://i.example"]);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const name = ledgerName("https://i.example", i.toString(16).padStart(32, "0"), 4, key);
      expect(ledgerName("https://i.example", i.toString(16).padStart(32, "0"), 4, key)).toBe(name);
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(ledgerNames("https://i.example", 4).sort());
    for (const n of counts.values()) expect(n).toBeGreaterThan(700);
  });

  it("the shard choice depends on the secret key: without it nobody can aim nonces at one shard", async () => {
    const { ledgerName } = await import("../../worker/protocol/ledger.js");
    const nonces = Array.from({ length: 64 }, (_, i) => i.toString(16).padStart(32, "0"));
    const differ = nonces.filter((n) => ledgerName("https://i.example", n, 16, key) !== ledgerName("https://i.example", n, 16, otherKey));
    expect(differ.length).toBeGreaterThan(48);
  });
});
