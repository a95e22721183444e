import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import bundle from "../../vectors/ec-agent/bundle.json" with { type: "json" };
import { harness } from "../support/app-harness.js";

const h = () => harness(env, createExecutionContext());
const post = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const rows = bundle.rows as Record<string, any>;

describe("EC-Agent routes in workerd", () => {
  it("POST /v1/ec/receipts/verify accepts a scenario receipt and names what a mutation breaks", async () => {
    const body = { receipt: rows["run-003/c3"], corpus: rows.corpus, events: rows["run-003/events"] };
    const ok = await h().call("/v1/ec/receipts/verify", post(body));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ valid: true, reasons: ["OK", "SUPPORT_LEXICAL_OVERLAP"] });
    const moved = await h().call("/v1/ec/receipts/verify", post({ ...body, receipt: { ...body.receipt, run_id: "run-004" } }));
    expect(moved.body).toMatchObject({ valid: false, reasons: ["JOINT_DIGEST_MISMATCH", "SUPPORT_LEXICAL_OVERLAP"] });
  });

  it("refuses a malformed corpus or an unknown field with 400 MALFORMED_REQUEST", async () => {
    for (const body of [{ receipt: {}, corpus: { d: { text: 1 } }, events: [] }, { receipt: {}, corpus: {}, events: [], extra: 1 }, { receipt: {}, events: [] }]) {
      const res = await h().call("/v1/ec/receipts/verify", post(body));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("POST /v1/bundles/replay reproduces the fixture and refuses a tampered row before trusting it", async () => {
    const ok = await h().call("/v1/bundles/replay", post({ bundle }));
    expect(ok.body).toMatchObject({ decision: "match", receipt_count: 16 });
    const tampered = structuredClone(bundle) as any;
    tampered.rows["run-001/events"][0].output = "edited";
    const bad = await h().call("/v1/bundles/replay", post({ bundle: tampered }));
    expect(bad.body).toMatchObject({ decision: "manifest_invalid", receipt_count: 0 });
  });

  it("POST /v1/support/evaluate returns both predicates with their fields and the configuration digest", async () => {
    const span = "The greenhouse closed for repairs in 1987 and opened again two years later.";
    const res = await h().call("/v1/support/evaluate", post({ claim: "The greenhouse opened for repairs in 1987.", spans: [span] }));
    expect(res.status).toBe(200);
    expect(res.body.lexical.supported).toBe(true);
    expect(res.body.guard.passed).toBe(true);
    const strict = await h().call("/v1/support/evaluate", post({ claim: "The greenhouse opened for repairs in 1987.", spans: ["The greenhouse closed for repairs in 1987."] }));
    expect(strict.body.guard).toMatchObject({ passed: false, spans: [{ reasons: ["GUARD_CONFLICT"], conflicts: [["opened", "closed"]] }] });
    const other = await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config: { threshold: 0.75 } }));
    expect(other.body.config_digest).not.toBe(res.body.config_digest);
    for (const config of [{ threshold: 0 }, { threshold: 2 }, { pairs: [["a"]] }, { extra: 1 }]) {
      expect((await h().call("/v1/support/evaluate", post({ claim: "x", spans: ["y"], config }))).status).toBe(400);
    }
    expect((await h().call("/v1/support/evaluate", post({ claim: "x", spans: [] }))).status).toBe(400);
  });
});
