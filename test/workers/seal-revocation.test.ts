/**
 * CCS §14 and chain seals, in workerd with real Durable Objects: once a key that signed one hop of
 * a chain is revoked, a seal issued before the revocation no longer vouches for that hop, however
 * the document is verified: in full, at a spot on another hop, or with the revoked hop pruned. A
 * kept hop's key is found from its receipt; a pruned hop's from the live chain this deployment
 * holds under that chain id. Chains the revoked key never signed keep their seal.
 */
import { env } from "cloudflare:workers";
import { createExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { buildChain, pruneChain, type ChainDocument } from "../../worker/protocol/chain.js";
import { signSeal, type ChainSeal } from "../../worker/protocol/chain-seal.js";
import { identity, makeChainHops } from "../../vectors/ccs/factory.js";
import { AUDIENCE, harness, issuerFor, TEST_NOW, type Harness } from "../support/app-harness.js";

let counter = 0;
const post = (body: unknown): RequestInit => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const failuresOf = (res: { body: { failures: { hop: number; code: string }[] } }) => res.body.failures.map((f) => `${f.hop}:${f.code}`);
type Id = Awaited<ReturnType<typeof issuerFor>>;

/** Linked hops, one per identity; appended to a live chain of this deployment when `live`. */
async function chainOf(h: Harness, chainId: string, ids: Id[], live: boolean) {
  const hops = await makeChainHops(ids.map((i) => ({ id: i.id, spec: { label: `seal-revocation/${chainId}/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter } })));
  const chain = await buildChain(chainId, hops);
  if (live) {
    for (const e of chain.entries) {
      const res = await h.call(`/v1/chains/${chainId}/hops`, post({ entry: e }));
      expect(res.status, res.text).toBe(200);
    }
  }
  return chain;
}

/** A third-party sealer, pinned as a chain sealer; its seal over a chain with the given tail. */
async function sealer(h: Harness, name: string) {
  const id = await identity(name, `https://${name}.example`, "seal-1");
  expect((await h.pin({ issuer: id.issuer, org_id: null, chain_sealer: true, keys: [{ kid: id.kid, alg: "Ed25519", public_key: id.publicKey, not_after: null }] })).status).toBe(200);
  return async (chain: ChainDocument): Promise<ChainSeal> => {
    const tail = (await pruneChain(chain, [chain.entries.length - 1])).entries.at(-1) as { receipt_hash: string };
    return signSeal({ chain_id: chain.chain_id, total_hops: chain.entries.length, summary_hash: chain.summary_hash, tail: tail.receipt_hash }, id, TEST_NOW - 1);
  };
}

async function setup(test: string) {
  const h = harness(env, createExecutionContext());
  const planner = await issuerFor(`${test}-planner`);
  const worker = await issuerFor(`${test}-worker`);
  expect((await h.pin(planner.anchor)).status).toBe(200);
  expect((await h.pin(worker.anchor)).status).toBe(200);
  // This deployment's own key, pinned as the sealer its live chains' seals are verified under.
  expect((await h.pin((await h.call("/.well-known/ccs-issuer")).body)).status).toBe(200);
  return { h, planner, worker };
}

const verify = (h: Harness, chain: ChainDocument, seal: ChainSeal, spot?: number) => h.call("/v1/chains/verify", post({ chain, seal, ...(spot === undefined ? {} : { spot }) }));

/** Spot at each kept hop, full, and with `pruned` pruned (full and at a spot), all under `seal`. */
async function readings(h: Harness, chain: ChainDocument, seal: ChainSeal, pruned: number, spots: number[]) {
  const prunedDoc = await pruneChain(chain, [pruned]);
  const spotOnPruned = spots.find((s) => s !== pruned)!;
  return {
    full: await verify(h, chain, seal),
    spots: await Promise.all(spots.map((s) => verify(h, chain, seal, s))),
    pruned: await verify(h, prunedDoc, seal),
    prunedSpot: await verify(h, prunedDoc, seal, spotOnPruned),
  };
}

describe("a seal never vouches for a hop signed by a revoked key", () => {
  it("a live chain sealed before its worker key is revoked: spot at another hop, the revoked hop pruned, and full are all chain_valid false (ANCHOR_REVOKED at hop 1), under this deployment's seal and a third party's", async () => {
    const { h, planner, worker } = await setup("seal-rev-live");
    const chain = await chainOf(h, "seal-rev-live", [planner, worker, planner], true);
    const own = (await h.call("/v1/chains/seal-rev-live")).body.seal as ChainSeal;
    expect(own).toMatchObject({ chain_id: "seal-rev-live", total_hops: 3, summary_hash: chain.summary_hash });
    const third = await (await sealer(h, "seal-rev-live-sealer"))(chain);
    expect(third).toMatchObject({ tail: own.tail, summary_hash: own.summary_hash });

    // Honest control: before the revocation every reading is valid under either seal.
    for (const seal of [own, third]) {
      const r = await readings(h, chain, seal, 1, [0, 2]);
      for (const res of [r.full, ...r.spots, r.pruned, r.prunedSpot]) expect(res.body, res.text).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
    }

    expect((await h.revoke(worker.id.issuer, worker.id.kid)).status).toBe(200);
    for (const seal of [own, third]) {
      const r = await readings(h, chain, seal, 1, [0, 2]);
      // (c) full: hop 1's receipt itself is refused by its ledger (a third party's seal is not
      // needed for a verified hop and stays valid; this deployment's own is withdrawn).
      expect(r.full.body).toMatchObject({ chain_valid: false, broken_at_hop: 1, seal: { valid: seal !== own } });
      expect(failuresOf(r.full)).toContain("1:ANCHOR_REVOKED");
      // (a) spot at hop 0 and at hop 2: hop 1 was not verified, and the seal does not vouch for it.
      for (const spot of r.spots) {
        expect(spot.body).toMatchObject({ chain_valid: false, spot_valid: true, seal: { valid: false } });
        expect(failuresOf(spot)).toContain("1:ANCHOR_REVOKED");
      }
      // (b) hop 1 pruned, in full and at a spot: the live chain names the revoked hop by its receipt hash.
      for (const res of [r.pruned, r.prunedSpot]) {
        expect(res.body).toMatchObject({ chain_valid: false, broken_at_hop: 1, seal: { valid: false } });
        expect(failuresOf(res)).toEqual(expect.arrayContaining(["1:ANCHOR_REVOKED", "1:CHAIN_UNSEALED"]));
      }
    }
  });

  it("a chain document this deployment does not hold: spot at another hop is refused from the receipt's own key; a chain the key never signed keeps its seal", async () => {
    const { h, planner, worker } = await setup("seal-rev-doc");
    const sealOf = await sealer(h, "seal-rev-doc-sealer");
    const mixed = await chainOf(h, "seal-rev-doc-mixed", [planner, worker, planner], false);
    const clean = await chainOf(h, "seal-rev-doc-clean", [planner, planner, planner], false);
    const mixedSeal = await sealOf(mixed);
    const cleanSeal = await sealOf(clean);
    for (const spot of [0, 2]) expect((await verify(h, mixed, mixedSeal, spot)).body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });

    expect((await h.revoke(worker.id.issuer, worker.id.kid)).status).toBe(200);
    for (const spot of [0, 2]) {
      const res = await verify(h, mixed, mixedSeal, spot);
      expect(res.body).toMatchObject({ chain_valid: false, spot_valid: true, seal: { valid: false } });
      expect(failuresOf(res)).toContain("1:ANCHOR_REVOKED");
    }
    expect(failuresOf(await verify(h, mixed, mixedSeal))).toContain("1:ANCHOR_REVOKED");
    // Honest control: the revoked key signed no hop of this chain; spot and pruned readings stand.
    for (const res of [await verify(h, clean, cleanSeal, 0), await verify(h, clean, cleanSeal, 2), await verify(h, await pruneChain(clean, [1]), cleanSeal), await verify(h, await pruneChain(clean, [1]), cleanSeal, 0)]) {
      expect(res.body, res.text).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });
    }
  });

  it("the receipts of a live chain presented under another chain_id, the revoked hop pruned: the revocation recorded the hop by receipt hash, so no seal vouches for it there either", async () => {
    const { h, planner, worker } = await setup("seal-rev-moved");
    const hops = await makeChainHops([planner, worker, planner].map((i) => ({ id: i.id, spec: { label: `seal-revocation/moved/${++counter}`, audience: AUDIENCE, issuedAt: TEST_NOW - 5, sequence: ++counter } })));
    const live = await buildChain("seal-rev-moved-live", hops);
    for (const e of live.entries) expect((await h.call("/v1/chains/seal-rev-moved-live/hops", post({ entry: e }))).status).toBe(200);
    const moved = await buildChain("seal-rev-moved-elsewhere", hops);
    const seal = await (await sealer(h, "seal-rev-moved-sealer"))(moved);
    const pruned = await pruneChain(moved, [1]);
    // Honest control: before the revocation the moved document stands under its seal.
    for (const spot of [undefined, 0, 2]) expect((await verify(h, pruned, seal, spot)).body).toMatchObject({ chain_valid: true, failures: [], seal: { valid: true } });

    expect((await h.revoke(worker.id.issuer, worker.id.kid)).status).toBe(200);
    for (const spot of [undefined, 0, 2]) {
      const res = await verify(h, pruned, seal, spot);
      expect(res.body).toMatchObject({ chain_valid: false, seal: { valid: false } });
      expect(failuresOf(res)).toEqual(expect.arrayContaining(["1:ANCHOR_REVOKED", "1:CHAIN_UNSEALED"]));
    }
  });
});
