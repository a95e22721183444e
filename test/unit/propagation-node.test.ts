import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { RP_NAME, RP_TOKEN } from "../support/app-harness.js";
import { buildAnchorRecord, pinnedIssuer, type PinnedIssuer } from "../../worker/protocol/anchors.js";
import { parseChain, summaryHash, verifyChain } from "../../worker/protocol/chain.js";
import { parseSeal } from "../../worker/protocol/chain-seal.js";
import { DEFAULT_FRESHNESS } from "../../worker/protocol/checks/freshness.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { fromHex } from "../../worker/protocol/encoding.js";
import { sha256 } from "../../worker/protocol/digest.js";
import { chainMismatches, mismatches, propagationVectors as pv, type Answer, type ChainAnswer } from "../support/vectors.js";
import { nodeEnv } from "../../cli/offline-env.js";
import { ChainVerdict } from "../../worker/contract/schemas.js";
import { ROOT } from "../support/paths.js";

describe("chain verification offline, under plain Node, from the pure protocol code", () => {
  const pinned = new Map<string, PinnedIssuer>();
  beforeAll(async () => {
    for (const anchor of pv.anchors) {
      const built = await buildAnchorRecord(anchor, 0);
      if (built.kind !== "built") throw new Error("vector anchor does not build");
      pinned.set(anchor.issuer, pinnedIssuer(built.record));
    }
  });

  for (const v of pv.chains) {
    it(`${v.id}: ${v.title}`, async () => {
      const parsed = parseChain(v.body.chain);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) return;
      const body = v.body as { spot?: number; seal?: unknown; check_freshness?: boolean };
      const seal = body.seal === undefined ? undefined : parseSeal(body.seal);
      if (seal && !seal.ok) throw new Error(seal.detail);
      const verdict = await verifyChain(
        parsed.chain,
        { spot: body.spot, checkFreshness: body.check_freshness, seal: seal?.seal, now: pv.now, policy: DEFAULT_FRESHNESS },
        { anchors: async (issuer) => pinned.get(issuer) ?? null, verifier: nobleVerifier },
      );
      expect("malformed" in verdict).toBe(false);
      expect(chainMismatches(v, { status: 200, body: verdict } as ChainAnswer)).toEqual([]);
    });
  }

  it("a hop after hop 0 without previous_receipt_hash is CHAIN_BROKEN, and the detail says it is missing (README: optional at hop 0 only)", async () => {
    const v = pv.chains.find((c) => c.id === "CV-010")!;
    const chain = structuredClone(v.body.chain) as { entries: Record<string, unknown>[] };
    delete chain.entries[1].previous_receipt_hash;
    const parsed = parseChain(chain);
    if (!parsed.ok) throw new Error("does not parse");
    const verdict = await verifyChain(parsed.chain, { checkFreshness: false, now: pv.now, policy: DEFAULT_FRESHNESS }, { anchors: async (issuer) => pinned.get(issuer) ?? null, verifier: nobleVerifier });
    if ("malformed" in verdict) throw new Error(verdict.malformed);
    expect(verdict.chain_valid).toBe(false);
    const broken = verdict.failures.filter((f) => f.code === "CHAIN_BROKEN").map((f) => f.detail);
    expect(broken).toContain("hop 1 has no previous_receipt_hash: every hop after hop 0 names the receipt hash of the hop before");
  });

  it("links report verified hops only: a sealed chain's pruned hops are in no link, and neither the contract nor the README offers a pruned status", async () => {
    const v = pv.chains.find((c) => c.id === "CHAIN-pruned-sealed")!;
    const parsed = parseChain(v.body.chain);
    const seal = parseSeal((v.body as { seal: unknown }).seal);
    if (!parsed.ok || !seal.ok) throw new Error("vector does not parse");
    const pruned = parsed.chain.entries.flatMap((e, i) => ("pruned" in e ? [i] : []));
    expect(pruned.length).toBeGreaterThan(0);
    const verdict = await verifyChain(parsed.chain, { seal: seal.seal, now: pv.now, policy: DEFAULT_FRESHNESS }, { anchors: async (issuer) => pinned.get(issuer) ?? null, verifier: nobleVerifier });
    if ("malformed" in verdict) throw new Error(verdict.malformed);
    expect(verdict.chain_valid).toBe(true);
    expect(verdict.links.map((l) => l.hop)).toEqual(verdict.verified_hops);
    expect(verdict.links.filter((l) => pruned.includes(l.hop))).toEqual([]);
    expect(ChainVerdict.shape.links.element.shape.status.options).toEqual(["none", "signed", "unsigned"]);
    const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
    const linksParagraph = readme.slice(readme.indexOf("`links` has one entry per verified hop"), readme.indexOf("`chain_valid` is about the evidence only"));
    expect(linksParagraph).toMatch(/`none` at hop 0/);
    expect(linksParagraph).not.toMatch(/`pruned`[;,]/);
  });

  it("CV-010's summary hash is SHA-256 over the concatenated raw receipt digests, recomputed independently", async () => {
    const v = pv.chains.find((c) => c.id === "CV-010")!;
    const digests = await Promise.all(
      v.body.chain.entries.map(async (e) => {
        const { jcs } = await import("../../worker/protocol/digest.js");
        return sha256(jcs((e as { receipt: unknown }).receipt));
      }),
    );
    const concatenated = new Uint8Array(digests.length * 32);
    digests.forEach((d, i) => concatenated.set(d, i * 32));
    expect(await summaryHash(digests)).toBe(v.expect.summary_hash);
    expect(await summaryHash([concatenated.subarray(0, 32), concatenated.subarray(32, 64), concatenated.subarray(64)])).toBe(v.expect.summary_hash);
    expect(fromHex(v.expect.summary_hash!.slice(7))).toHaveLength(32);
  });
});

describe("CCS §11 vectors through the app under plain Node", () => {
  const { env, ledgerStub, ctx } = nodeEnv({ ORG_ID: pv.org_id });
  const app = createApp({ now: () => pv.now, verifier: nobleVerifier, ledgerStub });
  const post = (path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${RP_TOKEN}` }) =>
    app.request(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }, env, ctx);

  beforeAll(async () => {
    const party = { name: RP_NAME, audiences: [pv.audience], token: RP_TOKEN };
    expect((await post("/v1/admin/relying-parties", party, { authorization: "Bearer test-admin-token" })).status).toBe(201);
    for (const anchor of pv.anchors) {
      const res = await app.request("/v1/admin/anchors", { method: "PUT", headers: { authorization: "Bearer test-admin-token" }, body: JSON.stringify(anchor) }, env, ctx);
      expect(res.status).toBe(200);
    }
  });

  for (const v of pv.envelopes) {
    it(`${v.id}: ${v.title}`, async () => {
      for (const c of v.calls) {
        const res = await post("/v1/envelopes/verify", c.body);
        expect(mismatches(c as never, { status: res.status, body: await res.json() } as Answer)).toEqual([]);
      }
    });
  }
  for (const v of pv.chains) {
    it(`${v.id} over HTTP`, async () => {
      const res = await post("/v1/chains/verify", v.body);
      expect(chainMismatches(v, { status: res.status, body: await res.json() } as ChainAnswer)).toEqual([]);
    });
  }
});
