import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { buildChain, receiptDigest, receiptHashOf } from "../../worker/protocol/chain.js";
import { harness, issuerFor, TEST_NOW } from "../support/app-harness.js";
import { chainMismatches, mismatches, propagationVectors as pv } from "../support/vectors.js";

describe("CCS §11 vectors through the HTTP routes in workerd", () => {
  const h = harness(env, createExecutionContext(), { now: () => pv.now });
  beforeAll(async () => {
    for (const anchor of pv.anchors) expect((await h.pin(anchor)).status).toBe(200);
  });
  for (const v of pv.envelopes) {
    it(`${v.id}: ${v.title}`, async () => {
      for (const c of v.calls) expect(mismatches(c as never, await h.call("/v1/envelopes/verify", post(c.body)))).toEqual([]);
    });
  }
  for (const v of pv.chains) {
    it(`${v.id}: ${v.title}`, async () => {
      expect(chainMismatches(v, await h.call("/v1/chains/verify", post(v.body)))).toEqual([]);
    });
  }
});

const post = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function chainOf(test: string, n: number) {
  const h = harness(env, createExecutionContext());
  const issuer = await issuerFor(test);
  await h.pin(issuer.anchor);
  const receipts = [];
  for (let i = 0; i < n; i++) receipts.push((await issuer.receipt()).receipt as unknown as Record<string, unknown>);
  return { h, issuer, receipts, chain: await buildChain(test, receipts) };
}

describe("POST /v1/chains/verify", () => {
  it("changes the summary hash when any receipt changes", async () => {
    const { receipts, chain } = await chainOf("summary-sensitivity", 4);
    for (let i = 0; i < receipts.length; i++) {
      const changed = receipts.map((r, j) => (j === i ? { ...r, sequence: (r.sequence as number) + 1 } : r));
      expect((await buildChain("summary-sensitivity", changed)).summary_hash).not.toBe(chain.summary_hash);
    }
  });

  it("checks freshness only when asked", async () => {
    const { h, chain } = await chainOf("chain-freshness", 2);
    const late = TEST_NOW + 86400;
    expect((await h.call("/v1/chains/verify", post({ chain, at: late }))).body.chain_valid).toBe(true);
    const strict = await h.call("/v1/chains/verify", post({ chain, at: late, check_freshness: true }));
    expect(strict.body.failures.map((f: { hop: number; code: string }) => `${f.hop}:${f.code}`)).toEqual(["0:FRESHNESS_EXPIRED", "1:FRESHNESS_EXPIRED"]);
  });

  it("reports a hop signed by a revoked key", async () => {
    const { h, issuer, chain } = await chainOf("chain-revoked", 3);
    await h.revoke(issuer.id.issuer, issuer.id.kid);
    const res = await h.call("/v1/chains/verify", post({ chain }));
    expect(res.body).toMatchObject({ chain_valid: false, broken_at_hop: 0 });
    expect(new Set(res.body.failures.map((f: { code: string }) => f.code))).toEqual(new Set(["ANCHOR_REVOKED"]));
  });

  it.each([
    ["a chain that is not an object", { chain: [] }],
    ["an empty chain", { chain: { chain_id: "x", entries: [], summary_hash: "sha256:" + "0".repeat(64), total_hops: 0 } }],
    ["an unknown field", { chain: null, extra: 1 }],
  ])("refuses %s with 400 MALFORMED_REQUEST", async (_name, body) => {
    const res = await harness(env, createExecutionContext()).call("/v1/chains/verify", post(body));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
  });

  it("refuses a spot outside the chain or on a pruned hop with 400", async () => {
    const { h, chain } = await chainOf("chain-spot-bad", 3);
    expect((await h.call("/v1/chains/verify", post({ chain, spot: 3 }))).status).toBe(400);
    const pruned = { ...chain, entries: chain.entries.map((e, i) => (i === 1 ? { hop_count: 1, receipt_hash: receiptHashOf(new Uint8Array(32)), pruned: true } : e)) };
    expect((await h.call("/v1/chains/verify", post({ chain: pruned, spot: 1 }))).status).toBe(400);
  });
});

describe("live chains (EvidenceChain)", () => {
  const entry = async (receipt: Record<string, unknown>, hop: number, previous?: string) => ({
    entry: { hop_count: hop, ...(previous ? { previous_receipt_hash: previous } : {}), receipt },
  });
  const hashOf = async (r: Record<string, unknown>) => receiptHashOf(await receiptDigest(r));

  it("appends hops in order and reports the same summary as the chain document", async () => {
    const { h, receipts, chain } = await chainOf("live-append", 3);
    let previous: string | undefined;
    for (const [i, r] of receipts.entries()) {
      const res = await h.call("/v1/chains/live-append/hops", post(await entry(r, i, previous)));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ appended: true, hop_count: i, total_hops: i + 1 });
      previous = await hashOf(r);
    }
    const state = await h.call("/v1/chains/live-append");
    expect(state.body).toEqual({ chain_id: "live-append", total_hops: 3, tail: previous, summary_hash: chain.summary_hash, receipt_hashes: await Promise.all(receipts.map(hashOf)) });
  });

  it("refuses a wrong hop number, a wrong link and a predecessor for hop 0 with 409 CHAIN_BROKEN, leaving the chain unchanged", async () => {
    const { h, receipts } = await chainOf("live-refuse", 3);
    const path = "/v1/chains/live-refuse/hops";
    const hop0 = await h.call(path, post(await entry(receipts[0], 0, "sha256:" + "3".repeat(64))));
    expect([hop0.status, hop0.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    expect((await h.call("/v1/chains/live-refuse")).status).toBe(404);
    expect((await h.call(path, post(await entry(receipts[0], 0)))).status).toBe(200);
    const skip = await h.call(path, post(await entry(receipts[1], 2, await hashOf(receipts[0]))));
    expect([skip.status, skip.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    const badLink = await h.call(path, post(await entry(receipts[1], 1, "sha256:" + "4".repeat(64))));
    expect([badLink.status, badLink.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    const again = await h.call(path, post(await entry(receipts[0], 1, await hashOf(receipts[0]))));
    expect([again.status, again.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    expect((await h.call("/v1/chains/live-refuse")).body.total_hops).toBe(1);
  });

  it("of competing appends of the same hop exactly one wins: the chain never forks", async () => {
    const { h, receipts } = await chainOf("live-fork", 9);
    await h.call("/v1/chains/live-fork/hops", post(await entry(receipts[0], 0)));
    const tail = await hashOf(receipts[0]);
    const answers = await Promise.all(receipts.slice(1).map(async (r) => h.call("/v1/chains/live-fork/hops", post(await entry(r, 1, tail)))));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.error.code === "CHAIN_BROKEN")).toHaveLength(7);
    const state = await h.call("/v1/chains/live-fork");
    expect(state.body.total_hops).toBe(2);
  });

  it("refuses hop 16 with 409 HOP_LIMIT_EXCEEDED", async () => {
    const { h, receipts } = await chainOf("live-limit", 17);
    let previous: string | undefined;
    for (const [i, r] of receipts.slice(0, 16).entries()) {
      expect((await h.call("/v1/chains/live-limit/hops", post(await entry(r, i, previous)))).status).toBe(200);
      previous = await hashOf(r);
    }
    const res = await h.call("/v1/chains/live-limit/hops", post(await entry(receipts[16], 16, previous)));
    expect([res.status, res.body.error.code]).toEqual([409, "HOP_LIMIT_EXCEEDED"]);
  });

  it("refuses a receipt that does not verify with 422 and its code, and a malformed call with 400", async () => {
    const { h, receipts } = await chainOf("live-invalid", 1);
    const forged = { ...receipts[0], signature: "0".repeat(128) };
    const res = await h.call("/v1/chains/live-invalid/hops", post(await entry(forged, 0)));
    expect([res.status, res.body.error.code]).toEqual([422, "SIGNATURE_INVALID"]);
    const late = harness(env, createExecutionContext(), { now: () => TEST_NOW + 86400 });
    const expired = await late.call("/v1/chains/live-invalid/hops", post(await entry(receipts[0], 0)));
    expect([expired.status, expired.body.error.code]).toEqual([422, "FRESHNESS_EXPIRED"]);
    const pruned = await h.call("/v1/chains/live-invalid/hops", post({ entry: { hop_count: 0, receipt_hash: "sha256:" + "5".repeat(64), pruned: true } }));
    expect(pruned.status).toBe(400);
    expect((await h.call("/v1/chains/bad id!/hops", post(await entry(receipts[0], 0)))).status).toBe(400);
    expect((await h.call("/v1/chains/live-invalid")).status).toBe(404);
  });
});
