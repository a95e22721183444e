import { env } from "cloudflare:workers";
import { createExecutionContext, listDurableObjectIds } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { buildChain, pruneChain, receiptDigest, receiptHashOf, type ChainDocument, type ChainHop, type KeptEntry } from "../../worker/protocol/chain.js";
import { delegationContext } from "../../worker/protocol/issue.js";
import type { Receipt } from "../../worker/protocol/receipt.js";
import { signSeal } from "../../worker/protocol/chain-seal.js";
import { identity, makeChainHops } from "../../vectors/ccs/factory.js";
import { ADMIN_TOKEN, AUDIENCE, harness, issuerFor, SECOND_AUDIENCE, TEST_NOW, type Harness } from "../support/app-harness.js";
import { chainMismatches, mismatches, propagationVectors as pv } from "../support/vectors.js";
import { chainKvKey } from "../../worker/stores.js";
import type { Env } from "../../worker/env.js";

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

  it("a cross-org envelope whose self_contained is false, or absent, is NOT_SELF_CONTAINED and consumes nothing; with true it is accepted", async () => {
    // The vector addressed to another organisation, readdressed here: only ever refused, so its nonce is unspent.
    const base = pv.envelopes.find((v) => v.id === "ENV-org-mismatch")!.calls[0].body as { envelope: Record<string, unknown>; audience: string };
    const readdressed: Record<string, unknown> = { ...base.envelope, receiver_org_id: pv.org_id };
    const { self_contained: _dropped, ...absent } = readdressed;
    for (const envelope of [{ ...readdressed, self_contained: false }, absent]) {
      const res = await h.call("/v1/envelopes/verify", post({ ...base, envelope }));
      expect([res.status, res.body.decision, res.body.nonce_consumed]).toEqual([200, "reject", false]);
      expect(res.body.failures.map((f: { code: string }) => f.code)).toEqual(["NOT_SELF_CONTAINED"]);
    }
    const whole = await h.call("/v1/envelopes/verify", post({ ...base, envelope: readdressed }));
    expect(whole.body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true });
  });
});

const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({ method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

let counter = 0;
/** A pinned issuer of its own (trusted to seal chains) and `n` receipts for consecutive hops of one delegation (every link signed). */
async function signedChainOf(test: string, n: number, audience = AUDIENCE) {
  const h = harness(env, createExecutionContext());
  const issuer = await issuerFor(test);
  expect((await h.pin({ ...issuer.anchor, chain_sealer: true })).status).toBe(200);
  const hops = await makeChainHops(Array.from({ length: n }, (_, i) => ({ id: issuer.id, spec: { label: `${test}/hop/${i}/${++counter}`, audience, issuedAt: TEST_NOW - 5, sequence: ++counter } })));
  return { h, issuer, hops, chain: await buildChain(test, hops) };
}

const hashOf = async (r: Receipt | Record<string, unknown>) => receiptHashOf(await receiptDigest(r as Record<string, unknown>));
const failuresOf = (res: { body: { failures: { hop: number; code: string }[] } }) => res.body.failures.map((f) => `${f.hop}:${f.code}`);
const verifyChainCall = (h: Harness, body: unknown) => h.call("/v1/chains/verify", post(body));

describe("POST /v1/envelopes/verify at hop 0", () => {
  it("an envelope at hop 0 has no predecessor: previous_receipt_hash left out or null is not an error; from hop 1 on it is required", async () => {
    const { h, hops } = await signedChainOf("envelope-hop-0", 3);
    const envelopeOf = async (receipt: Receipt | Record<string, unknown>, hop: number) => ({
      envelope_version: "1.3", original_receipt: receipt, parent_trace_id: receipt.trace_id, child_trace_id: "0123456789abcdef",
      delegation_reason: "root", hop_count: hop, previous_receipt_hash: await hashOf(receipt),
    });
    const { previous_receipt_hash: _left, ...absent } = await envelopeOf(hops[0].receipt, 0);
    const leftOut = await h.call("/v1/envelopes/verify", post({ envelope: absent, audience: AUDIENCE }));
    expect([leftOut.status, leftOut.body.valid, leftOut.body.decision, leftOut.body.failures]).toEqual([200, true, "accept", []]);
    const nulled = await h.call("/v1/envelopes/verify", post({ envelope: { ...(await envelopeOf(hops[1].receipt, 0)), previous_receipt_hash: null }, audience: AUDIENCE }));
    expect([nulled.status, nulled.body.valid, nulled.body.decision]).toEqual([200, true, "accept"]);
    const { previous_receipt_hash: _gone, ...hop1 } = await envelopeOf(hops[2].receipt, 1);
    for (const envelope of [hop1, { ...hop1, previous_receipt_hash: null }]) {
      const refused = await h.call("/v1/envelopes/verify", post({ envelope, audience: AUDIENCE }));
      expect([refused.status, refused.body.error.code, refused.body.nonce_consumed]).toEqual([400, "ENVELOPE_MALFORMED", false]);
    }
  });
});

describe("POST /v1/chains/verify", () => {
  it("changes the summary hash when any receipt changes", async () => {
    const { hops, chain } = await signedChainOf("summary-sensitivity", 4);
    for (let i = 0; i < hops.length; i++) {
      const changed = hops.map((hop, j) => (j === i ? { ...hop, receipt: { ...hop.receipt, sequence: hop.receipt.sequence! + 1 } } : hop));
      expect((await buildChain("summary-sensitivity", changed)).summary_hash).not.toBe(chain.summary_hash);
    }
  });

  it("reports every link: none at hop 0, signed where the receipt's delegation names the hop before", async () => {
    const { h, chain } = await signedChainOf("chain-links", 3);
    const res = await verifyChainCall(h, { chain });
    expect(res.body).toMatchObject({ chain_valid: true, spot_valid: null, links: [{ hop: 0, status: "none" }, { hop: 1, status: "signed" }, { hop: 2, status: "signed" }], seal: null });
  });

  it("a valid chain holding a deny and an escalate reports each hop's verdict and action: validity is about the evidence", async () => {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("chain-verdicts");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const verdicts = ["allow", "deny", "escalate"] as const;
    const hops = await makeChainHops(verdicts.map((verdict, i) => ({ id: issuer.id, spec: { label: `chain-verdicts/${i}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter, verdict } })));
    const res = await verifyChainCall(h, { chain: await buildChain("chain-verdicts", hops) });
    expect(res.body).toMatchObject({ chain_valid: true, failures: [] });
    expect(res.body.links).toEqual([
      { hop: 0, status: "none", verdict: "allow", action: "proceed_pending_reconciliation" },
      { hop: 1, status: "signed", verdict: "deny", action: "block" },
      { hop: 2, status: "signed", verdict: "escalate", action: "defer" },
    ]);
    const spot = await verifyChainCall(h, { chain: await buildChain("chain-verdicts", hops), spot: 1 });
    expect(spot.body.links).toEqual([{ hop: 1, status: "signed", verdict: "deny", action: "block" }]);
  });

  it("checks freshness by default; check_freshness: false is the archival opt-out, and alone admits at", async () => {
    const { chain } = await signedChainOf("chain-freshness", 2);
    const late = harness(env, createExecutionContext(), { now: () => TEST_NOW + 86400 });
    expect(failuresOf(await verifyChainCall(late, { chain }))).toEqual(["0:FRESHNESS_EXPIRED", "1:FRESHNESS_EXPIRED"]);
    expect((await verifyChainCall(late, { chain, check_freshness: false })).body.chain_valid).toBe(true);
    expect(failuresOf(await verifyChainCall(late, { chain, check_freshness: false, at: TEST_NOW + 86400 }))).toEqual(["0:FRESHNESS_EXPIRED", "1:FRESHNESS_EXPIRED"]);
    expect((await verifyChainCall(late, { chain, check_freshness: false, at: TEST_NOW })).body.chain_valid).toBe(true);
    const chosenInstant = await verifyChainCall(late, { chain, at: TEST_NOW });
    expect([chosenInstant.status, chosenInstant.body.error.code]).toEqual([400, "MALFORMED_REQUEST"]);
  });

  it("reports a hop signed by a revoked key, read from the issuer's ledger", async () => {
    const { h, issuer, chain } = await signedChainOf("chain-revoked", 3);
    await h.revoke(issuer.id.issuer, issuer.id.kid);
    const res = await verifyChainCall(h, { chain });
    expect(res.body).toMatchObject({ chain_valid: false, broken_at_hop: 0 });
    expect(new Set(res.body.failures.map((f: { code: string }) => f.code))).toEqual(new Set(["ANCHOR_REVOKED"]));
  });

  it("judges kept receipts by the receipt route's predicate: audience not judged, a consumed nonce not a failure", async () => {
    const { h, hops, chain } = await signedChainOf("chain-consumed", 2, SECOND_AUDIENCE);
    const consumed = await h.verify({ receipt: hops[0].receipt, audience: SECOND_AUDIENCE, request: hops[0].request, runtime_context: hops[0].runtime_context });
    expect(consumed.body.nonce_consumed).toBe(true);
    expect((await verifyChainCall(h, { chain })).body).toMatchObject({ chain_valid: true, failures: [] });
  });

  it.each([
    ["a chain that is not an object", { chain: [] }],
    ["an empty chain", { chain: { chain_id: "x", entries: [], summary_hash: "sha256:" + "0".repeat(64), total_hops: 0 } }],
    ["an unknown field", { chain: null, extra: 1 }],
    ["a seal that is not of its form", { chain: null, seal: { type: "other" } }],
  ])("refuses %s with 400 MALFORMED_REQUEST", async (_name, body) => {
    const res = await harness(env, createExecutionContext()).call("/v1/chains/verify", post(body));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("MALFORMED_REQUEST");
  });

  it("cuts a hop's failure detail that quotes its receipt at 1,024 characters (an unknown field of 200,000 was answered whole: 200 KB; on a live append twice, 400 KB)", async () => {
    const { h, chain } = await signedChainOf("long-unknown-field", 2);
    const [first, second] = chain.entries as KeptEntry[];
    const res = await verifyChainCall(h, { chain: { ...chain, entries: [first, { ...second, receipt: { ...second.receipt, ["k".repeat(200_000)]: 1 } }] } });
    expect(res.status).toBe(200);
    const malformed = res.body.failures.find((f: { code: string }) => f.code === "MALFORMED_RECEIPT");
    expect(malformed.detail).toMatch(/^unknown field "kkk+… \(\d+ more characters\)$/);
    expect(JSON.stringify(res.body).length).toBeLessThan(10_000);
    const appended = await h.call("/v1/chains/long-unknown-field-live/hops", post({ entry: { ...first, receipt: { ...first.receipt, ["k".repeat(200_000)]: 1 } } }));
    expect([appended.status, appended.body.error.code]).toEqual([400, "MALFORMED_RECEIPT"]);
    expect(appended.body.error.detail).toMatch(/^unknown field "kkk+… \(\d+ more characters\)$/);
    expect(appended.body.failures[0].detail).toBe(appended.body.error.detail);
  });

  it("takes a hop whose runtime context is nested as deep as the receipt route (and intake) take it, on the verify and the live route alike", async () => {
    // The body's nesting cap (32) counted from the root refused, on the chain routes, the runtime
    // context intake signs and the receipt route takes: a receipt could be verified alone but
    // never presented in a chain (400 too_deep at chain / at entry).
    const nest = (n: number): unknown => (n === 0 ? 1 : { a: nest(n - 1) });
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("deep-context");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const deepest = { x: nest(30) }; // with the delegation beside it: 31 levels, the most the receipt route reads at its depth 2
    const hops = await makeChainHops([0, 1].map((i) => ({ id: issuer.id, spec: { label: `deep-context/${i}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter, runtimeContext: deepest } })));
    const alone = await h.verify({ receipt: hops[0].receipt, audience: AUDIENCE, mode: "audit", runtime_context: hops[0].runtime_context });
    expect([alone.status, alone.body.valid]).toEqual([200, true]);
    const chain = await buildChain("deep-context", hops);
    const verified = await verifyChainCall(h, { chain });
    expect([verified.status, verified.body.chain_valid, verified.body.links?.map((l: { status: string }) => l.status)]).toEqual([200, true, ["none", "signed"]]);
    const appended = await h.call("/v1/chains/deep-context-live/hops", post({ entry: chain.entries[0] }));
    expect([appended.status, appended.body.appended]).toEqual([200, true]);
    // One level deeper than the receipt route reads is still refused, there and on both chain routes.
    const deeper = { ...hops[0].runtime_context, x: nest(31) };
    expect((await h.verify({ receipt: hops[0].receipt, audience: AUDIENCE, mode: "audit", runtime_context: deeper })).status).toBe(400);
    expect((await verifyChainCall(h, { chain: { ...chain, entries: [{ ...chain.entries[0], runtime_context: deeper }] } })).status).toBe(400);
    expect((await h.call("/v1/chains/deep-context-live-2/hops", post({ entry: { ...chain.entries[0], runtime_context: deeper } }))).status).toBe(400);
  });

  it("takes a full chain of 16 hops each binding a runtime context of the 16 KiB intake signs (over 256 KiB in all)", async () => {
    // At 256 KiB, the chain route refused with 413 any full document of more than 14 such hops,
    // although intake signs them and every hop could be appended to a live chain one by one.
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor("wide-context");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const runtimeContext = { note: "n".repeat(16 * 1024 - 20) };
    const hops = await makeChainHops(Array.from({ length: 16 }, (_, i) => ({ id: issuer.id, spec: { label: `wide-context/${i}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter, runtimeContext } })));
    const body = JSON.stringify({ chain: await buildChain("wide-context", hops) });
    expect(body.length).toBeGreaterThan(256 * 1024);
    const res = await h.call("/v1/chains/verify", { method: "POST", headers: { "content-type": "application/json" }, body });
    expect([res.status, res.body.chain_valid, res.body.total_hops]).toEqual([200, true, 16]);
    // The cap still holds: a document past it is 413 before anything is read.
    const over = await h.call("/v1/chains/verify", { method: "POST", headers: { "content-type": "application/json" }, body: body + " ".repeat(512 * 1024) });
    expect([over.status, over.body.error.code]).toEqual([413, "REQUEST_TOO_LARGE"]);
  });

  it("refuses a spot outside the chain or on a pruned hop with 400", async () => {
    const { h, chain } = await signedChainOf("chain-spot-bad", 3);
    expect((await verifyChainCall(h, { chain, spot: 3 })).status).toBe(400);
    expect((await verifyChainCall(h, { chain: await pruneChain(chain, [1]), spot: 1 })).status).toBe(400);
  });
});

describe("forgeries a chain document alone once passed", () => {
  it("two unrelated receipts with a recomputed link are refused with LINK_UNSIGNED; a signed link passes", async () => {
    const { h, issuer, chain } = await signedChainOf("forge-unrelated", 2);
    const unrelated = await buildChain("forge-unrelated", [{ receipt: (await issuer.receipt()).receipt }, { receipt: (await issuer.receipt()).receipt }]);
    const res = await verifyChainCall(h, { chain: unrelated });
    expect([res.body.chain_valid, failuresOf(res)]).toEqual([false, ["1:LINK_UNSIGNED"]]);
    expect(res.body.links).toMatchObject([{ hop: 0, status: "none" }, { hop: 1, status: "unsigned" }]);
    expect((await verifyChainCall(h, { chain })).body.chain_valid).toBe(true);
  });

  it("a fabricated pruned hop 0 is refused with CHAIN_UNSEALED; a pruned hop under a valid seal passes", async () => {
    const { h, issuer, hops } = await signedChainOf("forge-hop0", 2);
    const real = await buildChain("forge-hop0", hops);
    const fabricated = await pruneChain({ ...real, entries: [{ hop_count: 0, receipt: { ...hops[0].receipt, nonce: "f".repeat(32) } }, real.entries[1]] }, [0]);
    const res = await verifyChainCall(h, { chain: { ...fabricated, summary_hash: (await buildChain("x", [{ receipt: { ...hops[0].receipt, nonce: "f".repeat(32) } }, hops[1]])).summary_hash } });
    expect(res.body.chain_valid).toBe(false);
    expect(failuresOf(res)[0]).toBe("0:CHAIN_UNSEALED");
    const honest = await pruneChain(real, [0]);
    const seal = await sealWith(issuer.id, honest);
    expect((await verifyChainCall(h, { chain: honest, seal })).body).toMatchObject({ chain_valid: true, links: [{ hop: 1, status: "signed" }], seal: { valid: true } });
  });

  it("a receipt under an unpinned key hidden as a pruned hop is refused with CHAIN_UNSEALED, and kept with UNTRUSTED_ISSUER", async () => {
    const { h, issuer } = await signedChainOf("forge-hidden", 1);
    const stranger = await identity("forge-hidden/stranger", "https://never-pinned-stranger.example", "s1");
    const spec = (i: number) => ({ label: `forge-hidden/${i}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter });
    const hops = await makeChainHops([{ id: issuer.id, spec: spec(0) }, { id: stranger, spec: spec(1) }, { id: issuer.id, spec: spec(2) }]);
    const chain = await buildChain("forge-hidden", hops);
    expect(failuresOf(await verifyChainCall(h, { chain }))).toEqual(["1:UNTRUSTED_ISSUER"]);
    expect(failuresOf(await verifyChainCall(h, { chain: await pruneChain(chain, [1]) }))).toEqual(["1:CHAIN_UNSEALED"]);
    const honest = await buildChain("forge-hidden", await makeChainHops([0, 1, 2].map((i) => ({ id: issuer.id, spec: spec(i) }))));
    expect((await verifyChainCall(h, { chain: honest })).body.chain_valid).toBe(true);
  });

  it("a 30-day-old receipt is refused with FRESHNESS_EXPIRED by default; a fresh one passes", async () => {
    const { h, issuer, chain } = await signedChainOf("forge-stale", 2);
    const old = await makeChainHops([0, 1].map((i) => ({ id: issuer.id, spec: { label: `forge-stale/old/${i}`, audience: AUDIENCE, issuedAt: TEST_NOW - 30 * 86400, sequence: ++counter } })));
    const res = await verifyChainCall(h, { chain: await buildChain("forge-stale", old) });
    expect(failuresOf(res)).toEqual(["0:FRESHNESS_EXPIRED", "1:FRESHNESS_EXPIRED"]);
    expect((await verifyChainCall(h, { chain })).body.chain_valid).toBe(true);
  });

  it("[x, x, x] is refused with RECEIPT_REPEATED at each repeat, even under a seal; distinct receipts pass", async () => {
    const { h, issuer, hops, chain } = await signedChainOf("forge-thrice", 3);
    const thrice = await buildChain("forge-thrice", [hops[0], hops[0], hops[0]]);
    const res = await verifyChainCall(h, { chain: thrice });
    expect(failuresOf(res).filter((f) => f.endsWith("RECEIPT_REPEATED"))).toEqual(["1:RECEIPT_REPEATED", "2:RECEIPT_REPEATED"]);
    expect(failuresOf(await verifyChainCall(h, { chain: thrice, seal: await sealWith(issuer.id, thrice) }))).toContain("1:RECEIPT_REPEATED");
    expect((await verifyChainCall(h, { chain })).body.chain_valid).toBe(true);
  });
});

/** A seal over `chain` by a vector identity (pinned for its issuer in the test), sealed at `sealedAt`. */
async function sealWith(id: { issuer: string; kid: string; seed: Uint8Array }, chain: ChainDocument, sealedAt = TEST_NOW) {
  const last = chain.entries.at(-1)!;
  const tail = "pruned" in last ? last.receipt_hash : await hashOf(last.receipt);
  return signSeal({ chain_id: chain.chain_id, total_hops: chain.entries.length, summary_hash: chain.summary_hash, tail }, id, sealedAt);
}

describe("spot verification vouches for the whole chain only under a seal", () => {
  it("one genuine receipt and two made-up entries with face-value delegations: spot 0 is chain_valid false (CHAIN_UNSEALED), spot_valid true", async () => {
    const { h, issuer, hops } = await signedChainOf("spot-overclaim", 1);
    const [genuine] = hops;
    const madeUp = async (previous: ChainHop, hop: number): Promise<ChainHop> => {
      const receipt = { ...(previous.receipt as Record<string, unknown>), nonce: (hop.toString(16) + "e").repeat(16), sequence: 9_000_000 + hop };
      return { receipt, runtime_context: { delegation: { previous_receipt_hash: await hashOf(previous.receipt), parent_trace_id: previous.receipt.trace_id, hop_count: hop } } };
    };
    const one = await madeUp(genuine, 1);
    const chain = await buildChain("spot-overclaim", [genuine, one, await madeUp(one, 2)]);
    const spot = await verifyChainCall(h, { chain, spot: 0 });
    expect(spot.body).toMatchObject({ chain_valid: false, broken_at_hop: 1, spot_valid: true, total_hops: 3, mode: "spot", verified_hops: [0] });
    expect(failuresOf(spot)).toEqual(["1:CHAIN_UNSEALED"]);
    expect(spot.body.failures[0].detail).toMatch(/spot verification vouches for the whole chain only under a seal/);
    const full = await verifyChainCall(h, { chain });
    expect([full.body.chain_valid, full.body.broken_at_hop]).toEqual([false, 1]);

    const { chain: honest } = await signedChainOf("spot-honest", 3);
    const sealed = await verifyChainCall(h, { chain: honest, spot: 1, seal: await sealWith(issuer.id, honest) });
    expect(sealed.body).toMatchObject({ chain_valid: true, spot_valid: true, failures: [], seal: { valid: true } });
    const unsealed = await verifyChainCall(h, { chain: honest, spot: 1 });
    expect([unsealed.body.chain_valid, unsealed.body.spot_valid, failuresOf(unsealed)]).toEqual([false, true, ["0:CHAIN_UNSEALED"]]);
  });

  it("a spot hop that fails is spot_valid false, even under a valid seal", async () => {
    const { h, issuer, hops } = await signedChainOf("spot-fails", 2);
    const forged = await buildChain("spot-fails", [hops[0], { ...hops[1], receipt: { ...hops[1].receipt, signature: "0".repeat(128) } }]);
    const res = await verifyChainCall(h, { chain: forged, spot: 1, seal: await sealWith(issuer.id, forged) });
    expect(res.body).toMatchObject({ chain_valid: false, spot_valid: false, seal: { valid: true } });
    expect(failuresOf(res)).toContain("1:SIGNATURE_INVALID");
  });
});

describe("seals: the key's validity and the sealer's trust", () => {
  /** Receipts that sign no link (each verifies alone), so the document stands only under a valid seal. */
  async function unlinkedChain(test: string) {
    const h = harness(env, createExecutionContext());
    const issuer = await issuerFor(test);
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const chain = await buildChain(test, [{ receipt: (await issuer.receipt()).receipt }, { receipt: (await issuer.receipt()).receipt }]);
    expect(failuresOf(await verifyChainCall(h, { chain }))).toEqual(["1:LINK_UNSIGNED"]);
    return { h, chain };
  }
  async function sealer(test: string, key: { not_after?: number; chain_sealer?: boolean } = {}, h = harness(env, createExecutionContext())) {
    const id = await identity(test, `https://${test}.example`, "seal-1");
    const pin = { issuer: id.issuer, org_id: null, ...(key.chain_sealer === false ? {} : { chain_sealer: true }), keys: [{ kid: id.kid, alg: "Ed25519", public_key: id.publicKey, not_after: key.not_after ?? null }] };
    expect((await h.pin(pin)).status).toBe(200);
    return id;
  }

  it("a seal by a key past its not_after, back-dated into its validity, is refused with UNTRUSTED_ISSUER; a key still valid seals", async () => {
    const { h, chain } = await unlinkedChain("seal-expired-key");
    // The receipts were issued at TEST_NOW - 5: a seal may be dated up to the skew (30 s) before them.
    const expired = await sealer("seal-expired-sealer", { not_after: TEST_NOW - 10 });
    const res = await verifyChainCall(h, { chain, seal: await sealWith(expired, chain, TEST_NOW - 20) });
    expect(res.body).toMatchObject({ chain_valid: false, seal: { valid: false } });
    expect(failuresOf(res)).toEqual(["1:LINK_UNSIGNED", "1:UNTRUSTED_ISSUER"]);
    expect(res.body.failures[1].detail).toMatch(/not_after/);
    const live = await sealer("seal-live-sealer", { not_after: TEST_NOW + 86400 });
    expect((await verifyChainCall(h, { chain, seal: await sealWith(live, chain, TEST_NOW - 20) })).body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
  });

  it("a seal dated before the receipts it covers were issued (0, -1e15, or beyond the skew) is refused with FRESHNESS_EXPIRED; within the skew it holds", async () => {
    const { h, chain } = await unlinkedChain("seal-before-receipts");
    const id = await sealer("seal-before-receipts-sealer");
    const latest = Math.max(...chain.entries.map((e) => (e as KeptEntry).receipt.issued_at as number));
    for (const sealedAt of [0, -1e15, latest - 31]) {
      const res = await verifyChainCall(h, { chain, seal: await sealWith(id, chain, sealedAt) });
      expect([res.body.chain_valid, res.body.seal.valid, failuresOf(res)], String(sealedAt)).toEqual([false, false, ["1:LINK_UNSIGNED", "1:FRESHNESS_EXPIRED"]]);
      expect(res.body.failures[1].detail).toMatch(/before the latest issued_at of the receipts it covers/);
    }
    expect((await verifyChainCall(h, { chain, seal: await sealWith(id, chain, latest - 30) })).body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
  });

  it("a seal whose sealed_at is beyond the clock skew in the future is refused with FRESHNESS_EXPIRED; within the skew it holds", async () => {
    const { h, chain } = await unlinkedChain("seal-future");
    const id = await sealer("seal-future-sealer");
    const ahead = await verifyChainCall(h, { chain, seal: await sealWith(id, chain, TEST_NOW + 3600) });
    expect([ahead.body.chain_valid, failuresOf(ahead)]).toEqual([false, ["1:LINK_UNSIGNED", "1:FRESHNESS_EXPIRED"]]);
    expect((await verifyChainCall(h, { chain, seal: await sealWith(id, chain, TEST_NOW + 10) })).body).toMatchObject({ chain_valid: true, seal: { valid: true } });
  });

  it("an issuer pinned for its receipts only cannot seal a chain of unrelated receipts: SEALER_NOT_TRUSTED; pinned as a sealer it can", async () => {
    const { h, chain } = await unlinkedChain("seal-untrusted");
    const receiptsOnly = await sealer("seal-receipts-only", { chain_sealer: false });
    const seal = await sealWith(receiptsOnly, chain);
    const res = await verifyChainCall(h, { chain, seal });
    expect(res.body).toMatchObject({ chain_valid: false, seal: { valid: false } });
    expect(failuresOf(res)).toEqual(["1:LINK_UNSIGNED", "1:SEALER_NOT_TRUSTED"]);
    expect((await h.call(`/v1/issuers/${encodeURIComponent(receiptsOnly.issuer)}`)).body.chain_sealer).toBe(false);
    await sealer("seal-receipts-only", {}, h);
    expect((await h.call(`/v1/issuers/${encodeURIComponent(receiptsOnly.issuer)}`)).body.chain_sealer).toBe(true);
    expect((await verifyChainCall(h, { chain, seal })).body).toMatchObject({ chain_valid: true, seal: { valid: true } });
  });
});

describe("live chains (EvidenceChain)", () => {
  const entry = (hop: ChainHop, i: number, previous?: string) => ({
    entry: { hop_count: i, ...(previous ? { previous_receipt_hash: previous } : {}), receipt: hop.receipt, ...(hop.runtime_context ? { runtime_context: hop.runtime_context } : {}) },
  });
  const append = async (h: Harness, chainId: string, hops: ChainHop[], headers: Record<string, string> = {}) => {
    let previous: string | undefined;
    const answers = [];
    for (const [i, hop] of hops.entries()) {
      answers.push(await h.call(`/v1/chains/${chainId}/hops`, post(entry(hop, i, previous), headers)));
      previous = await hashOf(hop.receipt);
    }
    return answers;
  };
  const OTHER_TOKEN = "other-relying-party-token-0123456789abcdef";
  const NARROW_TOKEN = "narrow-relying-party-token-0123456789abcdef";
  const asOther = { authorization: `Bearer ${OTHER_TOKEN}` };
  const asNarrow = { authorization: `Bearer ${NARROW_TOKEN}` };
  beforeAll(async () => {
    const h = harness(env, createExecutionContext());
    for (const [name, token, audiences] of [["other-party", OTHER_TOKEN, [AUDIENCE, SECOND_AUDIENCE]], ["narrow-party", NARROW_TOKEN, [AUDIENCE]]] as const) {
      const res = await h.call("/v1/admin/relying-parties", { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` }, body: JSON.stringify({ name, audiences, token }) });
      expect([201, 409]).toContain(res.status);
    }
  });

  it("appends signed hops in order and reports the same summary as the chain document", async () => {
    const { h, hops, chain } = await signedChainOf("live-append", 3);
    for (const [i, res] of (await append(h, "live-append", hops)).entries()) {
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ appended: true, hop_count: i, total_hops: i + 1, nonce_consumed: true });
    }
    const state = await h.call("/v1/chains/live-append");
    expect(state.body).toMatchObject({ chain_id: "live-append", owner: "test-relying-party", total_hops: 3, tail: await hashOf(hops[2].receipt), summary_hash: chain.summary_hash, receipt_hashes: await Promise.all(hops.map((x) => hashOf(x.receipt))) });
  });

  it("refuses a link only the entry states (no signed delegation) with 409 LINK_UNSIGNED, consuming no nonce", async () => {
    const { h, issuer, hops } = await signedChainOf("live-unsigned", 1);
    expect((await h.call("/v1/chains/live-unsigned/hops", post(entry(hops[0], 0)))).status).toBe(200);
    const plain = { receipt: (await issuer.receipt()).receipt };
    const res = await h.call("/v1/chains/live-unsigned/hops", post(entry(plain, 1, await hashOf(hops[0].receipt))));
    expect([res.status, res.body.error.code, res.body.nonce_consumed]).toEqual([409, "LINK_UNSIGNED", false]);
  });

  it("refuses a wrong hop number, a wrong link and a predecessor for hop 0 with 409 CHAIN_BROKEN, leaving the chain unchanged and the nonce unconsumed", async () => {
    const { h, hops } = await signedChainOf("live-refuse", 2);
    const path = "/v1/chains/live-refuse/hops";
    const hop0 = await h.call(path, post(entry(hops[0], 0, "sha256:" + "3".repeat(64))));
    expect([hop0.status, hop0.body.error.code, hop0.body.nonce_consumed]).toEqual([409, "CHAIN_BROKEN", false]);
    expect((await h.call("/v1/chains/live-refuse")).status).toBe(404);
    expect((await h.call(path, post(entry(hops[0], 0)))).status).toBe(200);
    const skip = await h.call(path, post(entry(hops[1], 2, await hashOf(hops[0].receipt))));
    expect([skip.status, skip.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    const badLink = await h.call(path, post(entry(hops[1], 1, "sha256:" + "4".repeat(64))));
    expect([badLink.status, badLink.body.error.code]).toEqual([409, "CHAIN_BROKEN"]);
    expect((await h.call("/v1/chains/live-refuse")).body.total_hops).toBe(1);
    expect((await h.call(path, post(entry(hops[1], 1, await hashOf(hops[0].receipt))))).status).toBe(200);
  });

  it("of competing appends of the same hop exactly one wins: the chain never forks", async () => {
    const { h, issuer, hops } = await signedChainOf("live-fork", 1);
    await h.call("/v1/chains/live-fork/hops", post(entry(hops[0], 0)));
    const tail = await hashOf(hops[0].receipt);
    const rivals = await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        const runtime_context = await delegationContext(hops[0].receipt, 1, { rival: k });
        return { receipt: (await issuer.receipt({ runtimeContext: runtime_context })).receipt, runtime_context };
      }),
    );
    const answers = await Promise.all(rivals.map((r) => h.call("/v1/chains/live-fork/hops", post(entry(r, 1, tail)))));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409 && a.body.error.code === "CHAIN_BROKEN")).toHaveLength(7);
    expect((await h.call("/v1/chains/live-fork")).body.total_hops).toBe(2);
  });

  it("the same receipt appended again as the next hop is 409 RECEIPT_REPEATED, consuming nothing and leaving the chain as it was", async () => {
    const { h, hops } = await signedChainOf("live-repeat", 1);
    expect((await append(h, "live-repeat", hops))[0].status).toBe(200);
    const again = await h.call("/v1/chains/live-repeat/hops", post(entry(hops[0], 1, await hashOf(hops[0].receipt))));
    expect([again.status, again.body.error.code, again.body.nonce_consumed]).toEqual([409, "RECEIPT_REPEATED", false]);
    expect(again.body.failures.map((f: { code: string }) => f.code)).toContain("RECEIPT_REPEATED");
    expect((await h.call("/v1/chains/live-repeat")).body.total_hops).toBe(1);
  });

  it("refuses hop 16 with 409 HOP_LIMIT_EXCEEDED", async () => {
    const { h, hops } = await signedChainOf("live-limit", 17);
    const answers = await append(h, "live-limit", hops);
    expect(answers.slice(0, 16).every((a) => a.status === 200)).toBe(true);
    expect([answers[16].status, answers[16].body.error.code]).toEqual([409, "HOP_LIMIT_EXCEEDED"]);
  });

  it("refuses a receipt that does not verify with 422 and its code, and a malformed call with 400", async () => {
    const { h, hops } = await signedChainOf("live-invalid", 1);
    const forged = { ...hops[0], receipt: { ...hops[0].receipt, signature: "0".repeat(128) } };
    const res = await h.call("/v1/chains/live-invalid/hops", post(entry(forged, 0)));
    expect([res.status, res.body.error.code]).toEqual([422, "SIGNATURE_INVALID"]);
    const late = harness(env, createExecutionContext(), { now: () => TEST_NOW + 86400 });
    const expired = await late.call("/v1/chains/live-invalid/hops", post(entry(hops[0], 0)));
    expect([expired.status, expired.body.error.code]).toEqual([422, "FRESHNESS_EXPIRED"]);
    const rebound = await h.call("/v1/chains/live-invalid/hops", post(entry({ ...hops[0], runtime_context: { other: true } }, 0)));
    expect([rebound.status, rebound.body.error.code]).toEqual([422, "BINDING_MISMATCH"]);
    const pruned = await h.call("/v1/chains/live-invalid/hops", post({ entry: { hop_count: 0, receipt_hash: "sha256:" + "5".repeat(64), pruned: true } }));
    expect(pruned.status).toBe(400);
    expect((await h.call("/v1/chains/bad id!/hops", post(entry(hops[0], 0)))).status).toBe(400);
    expect((await h.call("/v1/chains/live-invalid")).status).toBe(404);
    expect((await h.call("/v1/chains/live-invalid/hops", post(entry(hops[0], 0)))).status).toBe(200);
  });

  it("a chain belongs to the party that appended hop 0: another party's append is 403 CHAIN_NOT_OWNED and consumes no nonce, its read is 403", async () => {
    const { h, hops } = await signedChainOf("live-owned", 2);
    expect((await append(h, "live-owned", hops.slice(0, 1)))[0].status).toBe(200);
    const intruder = await h.call("/v1/chains/live-owned/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt)), asOther));
    expect([intruder.status, intruder.body.error.code]).toEqual([403, "CHAIN_NOT_OWNED"]);
    const read = await h.call("/v1/chains/live-owned", { headers: asOther });
    expect([read.status, read.body.error.code]).toEqual([403, "CHAIN_NOT_OWNED"]);
    expect(await h.call("/v1/chains/live-owned/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt))))).toMatchObject({ status: 200, body: { nonce_consumed: true } });
  });

  it("a party registered under a deleted party's name gets none of its chains", async () => {
    const { h, hops } = await signedChainOf("live-reused-name", 2);
    const token = (n: number) => `reused-chain-owner-token-${n}-0123456789abcdef`;
    const register = (n: number) => h.admin("POST", "/v1/admin/relying-parties", { name: "reused-chain-owner", audiences: [AUDIENCE], token: token(n) });
    const as = (n: number) => ({ authorization: `Bearer ${token(n)}` });
    expect((await register(1)).status).toBe(201);
    expect((await h.call("/v1/chains/live-reused-name/hops", post(entry(hops[0], 0), as(1)))).status).toBe(200);
    expect((await h.call("/v1/chains/live-reused-name", { headers: as(1) })).body.owner).toBe("reused-chain-owner");
    expect((await h.admin("DELETE", "/v1/admin/relying-parties/reused-chain-owner")).status).toBe(200);
    expect((await register(2)).status).toBe(201);
    const read = await h.call("/v1/chains/live-reused-name", { headers: as(2) });
    expect([read.status, read.body.error.code]).toEqual([403, "CHAIN_NOT_OWNED"]);
    const append = await h.call("/v1/chains/live-reused-name/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt)), as(2)));
    expect([append.status, append.body.error.code, append.body.nonce_consumed]).toEqual([403, "CHAIN_NOT_OWNED", undefined]);
  });

  it("hop 0 appended again by another party is 403 CHAIN_NOT_OWNED; the same party's fresh chain is its own", async () => {
    const { h, issuer, hops } = await signedChainOf("live-hop0-twice", 1);
    expect((await append(h, "live-hop0-twice", hops))[0].status).toBe(200);
    const [other] = await makeChainHops([{ id: issuer.id, spec: { label: `live-hop0-twice/other/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter } }]);
    const again = await h.call("/v1/chains/live-hop0-twice/hops", post(entry(other, 0), asOther));
    expect([again.status, again.body.error.code]).toEqual([403, "CHAIN_NOT_OWNED"]);
    expect((await h.call("/v1/chains/live-hop0-twice")).body).toMatchObject({ owner: "test-relying-party", total_hops: 1 });
    expect((await h.call("/v1/chains/live-hop0-twice-other/hops", post(entry(other, 0), asOther))).status).toBe(200);
  });

  it("hop 0 for a chain another party holds while the registry lags: refused 403 CHAIN_NOT_OWNED in the EvidenceChain's transaction, and the answer says the nonce was consumed", async () => {
    const { h, issuer, hops } = await signedChainOf("live-registry-lag", 1);
    expect((await append(h, "live-registry-lag", hops))[0].status).toBe(200);
    // A location whose KV has not seen the registration yet.
    await env.ANCHORS.delete(chainKvKey("live-registry-lag"));
    const [other] = await makeChainHops([{ id: issuer.id, spec: { label: `live-registry-lag/other/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter } }]);
    const late = await h.call("/v1/chains/live-registry-lag/hops", post(entry(other, 0), asOther));
    expect([late.status, late.body.error.code, late.body.nonce_consumed]).toEqual([403, "CHAIN_NOT_OWNED", true]);
    expect(await h.call("/v1/receipts/verify", post({ receipt: other.receipt, audience: AUDIENCE, request: other.request, runtime_context: other.runtime_context }, asOther))).toMatchObject({ body: { failures: [{ code: "REPLAY_DETECTED" }] } });
  });

  it("an EvidenceChain that fails after the hop's nonce was claimed: 503 VERIFIER_UNAVAILABLE, and the answer says the nonce was consumed (a retry is a replay)", async () => {
    const { hops } = await signedChainOf("live-chain-down", 1);
    const chainDown = { ...env, EVIDENCE_CHAIN: { idFromName: (n: string) => env.EVIDENCE_CHAIN.idFromName(n), get: () => ({ append: () => Promise.reject(new Error("evidence chain down")) }) } } as unknown as Env;
    const down = harness(chainDown, createExecutionContext());
    const res = await down.call("/v1/chains/live-chain-down/hops", post(entry(hops[0], 0)));
    expect([res.status, res.body.error.code, res.body.nonce_consumed]).toEqual([503, "VERIFIER_UNAVAILABLE", true]);
    const again = await harness(env, createExecutionContext()).call("/v1/chains/live-chain-down/hops", post(entry(hops[0], 0)));
    expect([again.status, again.body.error.code, again.body.nonce_consumed]).toEqual([422, "REPLAY_DETECTED", false]);
  });

  it("an append is retry-safe with an Idempotency-Key: after a failure past the claim the same call appends the hop, after a lost answer it is answered appended once; another key is a replay", async () => {
    const { hops } = await signedChainOf("live-chain-retry", 2);
    const chainDown = { ...env, EVIDENCE_CHAIN: { idFromName: (n: string) => env.EVIDENCE_CHAIN.idFromName(n), get: () => ({ append: () => Promise.reject(new Error("evidence chain down")) }) } } as unknown as Env;
    const keyed = (key: string) => ({ "idempotency-key": key });
    const h = harness(env, createExecutionContext());
    const down = await harness(chainDown, createExecutionContext()).call("/v1/chains/live-chain-retry/hops", post(entry(hops[0], 0), keyed("append-0")));
    expect([down.status, down.body.error.code, down.body.nonce_consumed]).toEqual([503, "VERIFIER_UNAVAILABLE", true]);
    const retried = await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[0], 0), keyed("append-0")));
    expect([retried.status, retried.body.appended, retried.body.total_hops, retried.body.idempotent_replay]).toEqual([200, true, 1, true]);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    // The hop landed and its answer was lost: the same call again is answered appended, and nothing is appended twice.
    const landed = await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[0], 0), keyed("append-0")));
    expect([landed.status, landed.body.total_hops, landed.body.receipt_hashes]).toEqual([200, 1, [await hashOf(hops[0].receipt)]]);
    expect((await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[0], 0), keyed("another-key")))).body.error.code).toBe("REPLAY_DETECTED");
    expect((await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[0], 0)))).body.error.code).toBe("CHAIN_BROKEN");
    const next = await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt)), keyed("append-1")));
    expect([next.status, next.body.total_hops, next.body.idempotent_replay]).toEqual([200, 2, undefined]);
    const nextAgain = await h.call("/v1/chains/live-chain-retry/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt)), keyed("append-1")));
    expect([nextAgain.status, nextAgain.body.total_hops, nextAgain.body.idempotent_replay]).toEqual([200, 2, true]);
    const state = await h.call("/v1/chains/live-chain-retry");
    expect(state.body.receipt_hashes).toEqual(await Promise.all(hops.map((x) => hashOf(x.receipt))));
  });

  it("an appended receipt must be addressed to one of the owner's audiences: else 403 AUDIENCE_NOT_ALLOWED", async () => {
    const { h, hops } = await signedChainOf("live-audience", 1, SECOND_AUDIENCE);
    const res = await h.call("/v1/chains/live-audience/hops", post(entry(hops[0], 0), asNarrow));
    expect([res.status, res.body.error.code]).toEqual([403, "AUDIENCE_NOT_ALLOWED"]);
    expect((await h.call("/v1/chains/live-audience")).status).toBe(404);
    const { hops: own } = await signedChainOf("live-audience-own", 1, AUDIENCE);
    expect((await h.call("/v1/chains/live-audience/hops", post(entry(own[0], 0), asNarrow))).status).toBe(200);
  });

  it("an appended receipt's nonce is consumed as on the receipt route: a replayed receipt is refused with REPLAY_DETECTED", async () => {
    const { h, hops } = await signedChainOf("live-replay", 1);
    expect((await append(h, "live-replay", hops))[0].body.nonce_consumed).toBe(true);
    const elsewhere = await h.call("/v1/chains/live-replay-elsewhere/hops", post(entry(hops[0], 0)));
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([422, "REPLAY_DETECTED"]);
    const audited = await h.verify({ receipt: hops[0].receipt, audience: AUDIENCE, mode: "audit" });
    expect(audited.body.failures.map((f: { code: string }) => f.code)).toEqual(["REPLAY_DETECTED"]);
    const { hops: fresh } = await signedChainOf("live-replay-fresh", 1);
    expect((await h.call("/v1/chains/live-replay-elsewhere/hops", post(entry(fresh[0], 0)))).status).toBe(200);
  });

  it("an unknown chain id and refused appends to a new id create no EvidenceChain; an accepted hop 0 creates exactly one", async () => {
    const objects = async () => (await listDurableObjectIds(env.EVIDENCE_CHAIN)).length;
    const { h, hops } = await signedChainOf("never-created", 2, SECOND_AUDIENCE);
    const before = await objects();
    const read = await h.call("/v1/chains/never-created");
    expect([read.status, read.body.error.code]).toEqual([404, "NOT_FOUND"]);
    const forged = await h.call("/v1/chains/never-created/hops", post(entry({ ...hops[0], receipt: { ...hops[0].receipt, signature: "0".repeat(128) } }, 0)));
    expect([forged.status, forged.body.error.code]).toEqual([422, "SIGNATURE_INVALID"]);
    const wrongAudience = await h.call("/v1/chains/never-created/hops", post(entry(hops[0], 0), asNarrow));
    expect([wrongAudience.status, wrongAudience.body.error.code]).toEqual([403, "AUDIENCE_NOT_ALLOWED"]);
    const predecessor = await h.call("/v1/chains/never-created/hops", post(entry(hops[0], 0, "sha256:" + "7".repeat(64))));
    expect([predecessor.status, predecessor.body.error.code, predecessor.body.nonce_consumed]).toEqual([409, "CHAIN_BROKEN", false]);
    const laterHop = await h.call("/v1/chains/never-created/hops", post(entry(hops[1], 1, await hashOf(hops[0].receipt))));
    expect([laterHop.status, laterHop.body.error.code]).toEqual([404, "NOT_FOUND"]);
    expect(await objects()).toBe(before);

    expect((await append(h, "never-created", hops.slice(0, 1)))[0].status).toBe(200);
    expect(await objects()).toBe(before + 1);
    expect((await h.call("/v1/chains/never-created")).body).toMatchObject({ owner: "test-relying-party", total_hops: 1 });
    // Registered under the party's registration, not its name alone.
    expect(await env.ANCHORS.get("chain:never-created", "json")).toEqual({ owner: expect.stringMatching(/^test-relying-party#[0-9a-f]{16}$/), created_at: TEST_NOW });
    // The count sees an object as soon as anything addresses it by name.
    await env.EVIDENCE_CHAIN.get(env.EVIDENCE_CHAIN.idFromName("addressed-once")).look();
    expect(await objects()).toBe(before + 2);
  });

  it("a chain the registry does not know is 404 even where its object holds hops: nothing is read", async () => {
    const { h, hops } = await signedChainOf("registry-forgotten", 1);
    expect((await append(h, "registry-forgotten", hops))[0].status).toBe(200);
    await env.ANCHORS.delete("chain:registry-forgotten");
    expect((await h.call("/v1/chains/registry-forgotten")).status).toBe(404);
  });

  it("this deployment seals its live chains: the sealed document verifies with a pruned hop, and any change breaks it", async () => {
    const h = harness(env, createExecutionContext());
    const own = await h.call("/.well-known/ccs-issuer");
    expect((await h.pin(own.body)).status).toBe(200);
    const { hops } = await signedChainOf("live-sealed", 4);
    expect((await append(h, "live-sealed", hops)).every((a) => a.status === 200)).toBe(true);
    const state = await h.call("/v1/chains/live-sealed");
    const { seal } = state.body;
    expect(seal).toMatchObject({ type: "countersign.chain-seal.v1", chain_id: "live-sealed", total_hops: 4, summary_hash: state.body.summary_hash, tail: state.body.tail, issuer: "https://countersign.test", kid: "test-signing-1" });
    const document = await pruneChain(await buildChain("live-sealed", hops), [2]);
    const verdict = await verifyChainCall(h, { chain: document, seal });
    expect(verdict.body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
    expect(failuresOf(await verifyChainCall(h, { chain: document }))).toEqual(["2:CHAIN_UNSEALED"]);

    const changedReceipt = { ...document, entries: document.entries.map((e, i) => (i === 1 ? { ...e, receipt: { ...(e as KeptEntry).receipt, verified_at: TEST_NOW } } : e)) };
    expect((await verifyChainCall(h, { chain: changedReceipt, seal })).body.chain_valid).toBe(false);
    const changedSeal = await verifyChainCall(h, { chain: document, seal: { ...seal, total_hops: 3 } });
    expect(failuresOf(changedSeal)).toEqual(["2:CHAIN_UNSEALED", "3:SEAL_INVALID", "3:SEAL_MISMATCH"]);
    const changedPruned = { ...document, entries: document.entries.map((e, i) => (i === 2 ? { ...e, receipt_hash: "sha256:" + "6".repeat(64) } : e)) };
    expect((await verifyChainCall(h, { chain: changedPruned, seal })).body.chain_valid).toBe(false);
  });

  it("the seal of a live chain read at a fractional second covers a hop issued up to the skew ahead of the append: sealed_at is the read's time rounded up, never before a receipt it covers less the skew", async () => {
    // Read and appended at TEST_NOW + 0.5; the hop was issued 29.8 s ahead of that (within the 30 s
    // skew). A seal dated floor(now) = TEST_NOW lay 30.3 s before that issued_at and was refused
    // FRESHNESS_EXPIRED by POST /v1/chains/verify with the receipt kept, for good.
    const h = harness(env, createExecutionContext(), { now: () => TEST_NOW + 0.5 });
    const own = await h.call("/.well-known/ccs-issuer");
    expect((await h.pin(own.body)).status).toBe(200);
    const issuer = await issuerFor("live-seal-ahead");
    expect((await h.pin(issuer.anchor)).status).toBe(200);
    const hops = await makeChainHops([{ id: issuer.id, spec: { label: "live-seal-ahead/hop/0", audience: AUDIENCE, issuedAt: TEST_NOW + 30.3, skew: 30, sequence: 1 } }]);
    expect((await append(h, "live-seal-ahead", hops))[0].status).toBe(200);
    const { seal } = (await h.call("/v1/chains/live-seal-ahead")).body;
    const verdict = await verifyChainCall(h, { chain: await buildChain("live-seal-ahead", hops), seal });
    expect(verdict.body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
    expect(seal.sealed_at).toBe(TEST_NOW + 1);
  });
});
