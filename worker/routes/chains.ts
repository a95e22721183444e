import { Hono } from "hono";
import type { AppEnv, Services } from "../app.js";
import { dependencyTimeout, freshnessPolicy, MAX_VERIFY_BODY } from "../config.js";
import type { AppendResult, ChainState } from "../../durable-objects/evidence-chain.js";
import { ApiError, readStrictJson, requireObject, withTimeout } from "../http.js";
import { countChainStarted } from "../observability.js";
import { CHAIN_ID, checkKeptReceipt, entryProblem, parseChain, receiptDigest, receiptHashOf, verifyChain, type ChainDeps, type KeptEntry } from "../protocol/chain.js";

const VERIFY_FIELDS = new Set(["chain", "spot", "check_freshness", "at"]);

export const chainRoutes = new Hono<AppEnv>();

/** Anchors, verifier and revoked key fingerprints (from each issuer's ledger, asked once per call). */
function chainDeps({ anchors, verifier, ledgers }: Services): ChainDeps {
  const revoked = new Map<string, Promise<Set<string>>>();
  return {
    anchors: (issuer) => anchors.pinned(issuer),
    verifier,
    revokedKeys(issuer) {
      let keys = revoked.get(issuer);
      if (!keys) {
        keys = anchors.pinned(issuer).then((p) => (p ? ledgers.revocations(issuer, p.ledgerShards).then((list) => new Set(list.map((r) => r.fingerprint))) : new Set<string>()));
        revoked.set(issuer, keys);
      }
      return keys;
    },
  };
}

/** Full or spot verification of a chain document. Pure apart from anchors and revocations. */
chainRoutes.post("/verify", async (c) => {
  const body = requireObject(await readStrictJson(c, MAX_VERIFY_BODY), "body");
  for (const key of Object.keys(body)) if (!VERIFY_FIELDS.has(key)) throw new ApiError(400, "MALFORMED_REQUEST", `unknown field ${JSON.stringify(key)}`);
  const parsed = parseChain(body.chain);
  if (!parsed.ok) throw new ApiError(400, "MALFORMED_REQUEST", parsed.detail);
  if (body.check_freshness !== undefined && typeof body.check_freshness !== "boolean") throw new ApiError(400, "MALFORMED_REQUEST", "check_freshness must be a boolean");
  if (body.at !== undefined && typeof body.at !== "number") throw new ApiError(400, "MALFORMED_REQUEST", "at must be a number of Unix seconds");
  const services = c.get("services");
  const verdict = await verifyChain(
    parsed.chain,
    { spot: body.spot as number | undefined, checkFreshness: body.check_freshness === true, now: (body.at as number | undefined) ?? services.now(), policy: freshnessPolicy(c.env) },
    chainDeps(services),
  );
  if ("malformed" in verdict) throw new ApiError(400, "MALFORMED_REQUEST", verdict.malformed);
  return c.json(verdict);
});

const chainStub = (c: { env: AppEnv["Bindings"] }, chainId: string) => {
  if (!CHAIN_ID.test(chainId)) throw new ApiError(400, "MALFORMED_REQUEST", "chain_id must be 1-128 of [A-Za-z0-9._:-]");
  return c.env.EVIDENCE_CHAIN.get(c.env.EVIDENCE_CHAIN.idFromName(chainId));
};

/**
 * Appends one hop to a live chain: the receipt must verify (pinned issuer, signature, not
 * revoked, fresh now), then the EvidenceChain takes it only as the next hop on the current tail.
 */
chainRoutes.post("/:chain_id/hops", async (c) => {
  const chainId = c.req.param("chain_id");
  const stub = chainStub(c, chainId);
  const body = requireObject(await readStrictJson(c, MAX_VERIFY_BODY), "body");
  if (Object.keys(body).length !== 1 || !Object.hasOwn(body, "entry")) throw new ApiError(400, "MALFORMED_REQUEST", "body must be {entry}");
  const problem = entryProblem(body.entry);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", `entry ${problem}`);
  const entry = body.entry as KeptEntry;
  if (!("receipt" in entry)) throw new ApiError(400, "MALFORMED_REQUEST", "a live chain takes kept entries only, not pruned ones");
  const services = c.get("services");
  const kept = await checkKeptReceipt(entry.receipt, { checkFreshness: true, now: services.now(), policy: freshnessPolicy(c.env) }, chainDeps(services));
  if (kept.failures.length > 0) {
    return c.json({ error: { code: kept.failures[0].code, detail: kept.failures[0].detail }, failures: kept.failures }, 422);
  }
  const receiptHash = receiptHashOf(await receiptDigest(entry.receipt));
  const appending = stub.append(chainId, entry.hop_count, entry.previous_receipt_hash ?? null, receiptHash) as Promise<AppendResult>;
  const result = await withTimeout(appending, dependencyTimeout(c.env), "evidence chain");
  if (result.kind === "conflict") return c.json({ error: { code: result.code, detail: result.detail }, chain: result.state }, 409);
  if (entry.hop_count === 0) countChainStarted(c);
  return c.json({ appended: true, hop_count: entry.hop_count, receipt_hash: receiptHash, ...result.state });
});

chainRoutes.get("/:chain_id", async (c) => {
  const chainId = c.req.param("chain_id");
  const reading = chainStub(c, chainId).read(chainId) as Promise<ChainState | null>;
  const state = await withTimeout(reading, dependencyTimeout(c.env), "evidence chain");
  if (!state) throw new ApiError(404, "NOT_FOUND", `chain ${chainId} has no hops`);
  return c.json(state);
});
