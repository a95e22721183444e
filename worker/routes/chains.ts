import { partyScope } from "../protocol/relying-parties.js";
import { Hono, type Context } from "hono";
import type { AppEnv, Services } from "../app.js";
import { dependencyTimeout, freshnessPolicy, MAX_CHAIN_BODY, MAX_VERIFY_BODY, signingIdentity } from "../config.js";
import type { AppendResult, ChainState, LookedChain, WithdrawnHop } from "../../durable-objects/evidence-chain.js";
import { ChainVerifyCall, HopCall } from "../contract/schemas.js";
import { ApiError, clipFailureDetails, jsonBody, readStrictJson, validateBody, withTimeout } from "../http.js";
import { CHAIN_ID, entryProblem, judgeHop, parseChain, verifyChain, type ChainDeps, type ChainFailure, type KeptEntry } from "../protocol/chain.js";
import { failure } from "../protocol/codes.js";
import { withdrawnReceiptKvKey } from "../protocol/anchors.js";
import { parseSeal, signSeal } from "../protocol/chain-seal.js";
import { DEFAULT_MAX_DEPTH, isJsonObject } from "../protocol/strict-json.js";
import { verifyReceipt, VerifierUnavailable } from "../protocol/verify.js";
import { audienceAllowed, idempotencyOf, verifierClasses, verifyDeps } from "./decision-call.js";
import { countChainStarted, countChainVerdict } from "../observability.js";
import { isLevel0Shape, level0Refused } from "../protocol/conformance/level0.js";
import { refuseIfOwnKeyRevoked } from "../own-key.js";

/**
 * Anchors, verifier, the issuers' ledgers, key revocations (each issuer's asked once per call) for
 * the seal's key and for the hops a seal vouches for unverified, and this deployment's live chain
 * of the document's id: a hop it holds signed by a revoked key is never vouched for by a seal
 * (that is how a pruned hop's key is learnt), and a seal of this deployment's own over a chain it
 * holds broken by a revocation is withdrawn.
 */
function chainDeps(c: Context<AppEnv>, services: Services): ChainDeps {
  const { anchors, ledgers } = services;
  const revoked = new Map<string, Promise<Set<string>>>();
  return {
    ...verifyDeps(services),
    revokedKeys(issuer) {
      let keys = revoked.get(issuer);
      if (!keys) {
        keys = anchors.pinned(issuer).then((p) => (p ? ledgers.revocations(issuer, p.ledgerShards).then((list) => new Set(list.map((r) => r.fingerprint))) : new Set<string>()));
        revoked.set(issuer, keys);
      }
      return keys;
    },
    async sealWithdrawals(chainId, hops, seal) {
      const timeout = dependencyTimeout(c.env);
      const held = (await services.chains.get(chainId)) ? await withTimeout(chainStub(c, chainId).withdrawnHops() as Promise<WithdrawnHop[]>, timeout, "evidence chain") : [];
      const byHash = new Map<string, { chain_id: string; hop: number; fingerprint: string }>(held.map((w) => [w.receipt_hash, { ...w, chain_id: chainId }]));
      // A hop of a live chain under another id, recorded when the revocation reached that chain.
      const elsewhere = await Promise.all(hops.map(({ receipt_hash }) => (byHash.has(receipt_hash) ? null : withTimeout(c.env.ANCHORS.get<{ chain_id: string; hop: number; fingerprint: string }>(withdrawnReceiptKvKey(receipt_hash), "json"), timeout, "anchor store"))));
      const out: ChainFailure[] = hops.flatMap(({ hop, receipt_hash }, i) => {
        const w = byHash.get(receipt_hash) ?? elsewhere[i];
        return w ? [{ ...failure("ANCHOR_REVOKED", `hop ${hop}'s receipt is hop ${w.hop} of live chain ${w.chain_id}, signed by a key since revoked (fingerprint ${w.fingerprint}): the seal does not vouch for it`), hop }] : [];
      });
      if (held.length > 0 && seal.issuer === signingIdentity(c.env).issuer) {
        out.push({ ...failure("ANCHOR_REVOKED", `this deployment's seal over chain ${chainId} is withdrawn: the live chain is broken at hop ${held[0].hop}, signed by a key since revoked`), hop: held[0].hop });
      }
      return out;
    },
  };
}

/**
 * How deep a chain body may nest. A hop's runtime context is what its receipt binds, and the
 * receipt route reads one nested as deep as the body cap allows at its place there
 * (`{runtime_context}`, depth 2), which is also where intake reads the context it signs. On the
 * chain routes the same context sits deeper (`{chain: {entries: [{runtime_context}]}}`, depth 5;
 * `{entry: {runtime_context}}`, depth 3), so each route's cap is raised by that difference: a
 * receipt verifiable with its context on the receipt route can be presented in a chain.
 */
export const VERIFY_BODY_DEPTH = DEFAULT_MAX_DEPTH + 3;
const HOP_BODY_DEPTH = DEFAULT_MAX_DEPTH + 1;

/** The chain id a path names: 400 when it cannot be one, before any read. */
function chainIdOf(c: Context<AppEnv>): string {
  const chainId = c.req.param("chain_id") ?? "";
  if (!CHAIN_ID.test(chainId)) throw new ApiError(400, "MALFORMED_REQUEST", "chain_id must be 1-128 of [A-Za-z0-9._:-]");
  return chainId;
}

/** The chain's EvidenceChain; addressed only for a chain in the registry, or once a new chain's hop 0 has verified. */
const chainStub = (c: Context<AppEnv>, chainId: string) => c.env.EVIDENCE_CHAIN.get(c.env.EVIDENCE_CHAIN.idFromName(chainId));

/** A chain's state as its owner is answered it: the owner by the party's name (the seal does not cover it). */
function shownTo<S extends { owner: string }>(c: Context<AppEnv>, state: S): S;
function shownTo<S extends { owner: string }>(c: Context<AppEnv>, state: S | null): S | null;
function shownTo<S extends { owner: string }>(c: Context<AppEnv>, state: S | null): S | null {
  return state && { ...state, owner: c.get("relyingParty").name };
}

/** A live chain is its owner's alone; existence is not hidden, since an append by another party would reveal it anyway. */
const notOwned = (chainId: string) => new ApiError(403, "CHAIN_NOT_OWNED", `chain ${chainId} belongs to another relying party`);
const unknownChain = (chainId: string) => new ApiError(404, "NOT_FOUND", `chain ${chainId} has no hops`);

export const chainRoutes = new Hono<AppEnv>()
  /**
   * Full or spot verification of a chain document, under a seal when one is given. Freshness is
   * judged now unless `check_freshness: false` (archival audit), which alone admits `at`.
   */
  .post("/verify", jsonBody(ChainVerifyCall), async (c) => {
  const body = validateBody(ChainVerifyCall, await readStrictJson(c, MAX_CHAIN_BODY, undefined, VERIFY_BODY_DEPTH));
  const parsed = parseChain(body.chain);
  if (!parsed.ok) throw new ApiError(400, "MALFORMED_REQUEST", parsed.detail);
  const seal = body.seal === undefined ? undefined : parseSeal(body.seal);
  if (seal && !seal.ok) throw new ApiError(400, "MALFORMED_REQUEST", seal.detail);
  if (body.at !== undefined && body.check_freshness !== false) throw new ApiError(400, "MALFORMED_REQUEST", "at is only accepted with check_freshness: false (archival audit)");
  const services = c.get("services");
  // The relying party's verifier-class floor (CCS §9) holds at every hop verified here: the
  // strictest of its floors for the audiences the kept receipts are addressed to.
  const addressed = parsed.chain.entries.flatMap((e) => ("pruned" in e || typeof e.receipt.audience !== "string" ? [] : [e.receipt.audience]));
  const classes = verifierClasses(c, addressed, verifyDeps(services));
  const verdict = await verifyChain(
    parsed.chain,
    {
      spot: body.spot,
      checkFreshness: body.check_freshness !== false,
      at: body.at,
      now: services.now(),
      policy: freshnessPolicy(c.env),
      seal: seal?.ok ? seal.seal : undefined,
      classCheck: classes.check,
    },
    { ...chainDeps(c, services), anchors: classes.deps.anchors },
  );
  if ("malformed" in verdict) throw new ApiError(400, "MALFORMED_REQUEST", verdict.malformed);
  // A hop's failure can quote its receipt (an unknown field's name): cut as an error's detail is.
  return c.json({ ...verdict, failures: clipFailureDetails(verdict.failures) });
})
  /**
   * Appends one hop to a live chain. The chain is the caller's (or new), the receipt is addressed
   * to one of the caller's audiences, and then the receipt goes through the receipt route's own
   * predicate in enforce mode with the hop rule as a context check: its nonce is consumed only when
   * every check, the link included, has passed. The EvidenceChain then applies the same hop rule
   * again in its transaction, against the tail as it is by then. A chain absent from the registry
   * takes only a hop 0, whose receipt is verified before its EvidenceChain is first addressed, so
   * a refused call creates no object; the chain is registered once that hop 0 is appended.
   */
  .post("/:chain_id/hops", jsonBody(HopCall), async (c) => {
  const chainId = chainIdOf(c);
  const body = validateBody(HopCall, await readStrictJson(c, MAX_VERIFY_BODY, undefined, HOP_BODY_DEPTH));
  if (!Object.hasOwn(body, "entry")) throw new ApiError(400, "MALFORMED_REQUEST", "body must be {entry}");
  const problem = entryProblem(body.entry);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", `entry ${problem}`);
  if (!isJsonObject(body.entry) || !("receipt" in body.entry)) throw new ApiError(400, "MALFORMED_REQUEST", "a live chain takes kept entries only, not pruned ones");
  const entry = body.entry as unknown as KeptEntry;
  const idempotency = idempotencyOf(c, body);
  if (isLevel0Shape(entry.receipt)) {
    const refused = level0Refused("a live chain");
    return c.json({ error: { code: refused.code, detail: refused.detail }, failures: [refused], nonce_consumed: false }, 422);
  }
  // Owned by the registration, not the name alone (a party registered later under a deleted
  // party's name gets none of its chains); answers name the owner by its name.
  const party = partyScope(c.get("relyingParty"));
  const services = c.get("services");
  const registered = await services.chains.get(chainId);
  if (registered && registered.owner !== party) throw notOwned(chainId);
  if (!registered && entry.hop_count !== 0) throw unknownChain(chainId);
  const audience = typeof entry.receipt.audience === "string" ? entry.receipt.audience : null;
  if (audience !== null && !audienceAllowed(c, audience)) throw new ApiError(403, "AUDIENCE_NOT_ALLOWED", "the receipt is addressed to an audience this relying party does not speak for");

  const timeout = dependencyTimeout(c.env);
  const held = registered ? await withTimeout(chainStub(c, chainId).look() as Promise<LookedChain | null>, timeout, "evidence chain") : null;
  if (held && held.owner !== party) throw notOwned(chainId);
  const before = held ?? { hashes: [], previousTraceId: null };
  // A chain broken by a revoked key takes no further hop: refused here, as a context check, so the
  // hop's nonce is not consumed for an append the EvidenceChain would refuse anyway.
  const broken = held?.broken ? [failure("CHAIN_BROKEN", `the chain is broken at hop ${held.broken.hop}: the key that signed it was revoked`)] : [];
  const previous = entry.previous_receipt_hash ?? null;
  // A retry (Idempotency-Key) of an append whose hop landed: the hop rule judged this receipt at
  // this hop then, and the nonce's retry tag tells whether this is that very call again.
  const landed = (receiptHash: string) => idempotency !== undefined && held?.hashes[entry.hop_count] === receiptHash;
  // The relying party's verifier-class floor (CCS §9) holds here as on the receipt route.
  const classes = verifierClasses(c, audience ?? "", verifyDeps(services));
  let signedBy: string | null = null;
  const decision = await verifyReceipt(
    entry.receipt,
    {
      audience,
      mode: "enforce",
      now: services.now(),
      policy: freshnessPolicy(c.env),
      runtimeContext: entry.runtime_context,
      contextChecks: (r, receiptHash) => [
        ...classes.check(r.issuer),
        ...broken,
        ...(landed(receiptHash) ? [] : judgeHop({ pruned: false, hop_count: entry.hop_count, previous_receipt_hash: previous, runtime_context: entry.runtime_context, receipt_hash: receiptHash }, before, false).failures),
      ],
      onSigned: (fingerprint) => (signedBy = fingerprint),
      ...(idempotency ? { idempotency } : {}),
    },
    classes.deps,
  );
  if (!decision.valid) {
    const failures = clipFailureDetails(decision.failures);
    const [first] = failures;
    const status = first.code === "MALFORMED_RECEIPT" ? 400 : first.step === 7 ? 409 : 422;
    return c.json({ error: { code: first.code, detail: first.detail }, failures, nonce_consumed: decision.nonce_consumed }, status);
  }
  // CCS 13.7: the receipt's verdict counts for its issuer once, here, as the call that consumed its nonce.
  const retry = decision.idempotent_replay === true;
  if (decision.nonce_consumed && !retry && decision.enforcement.verdict !== null) countChainVerdict(c, decision.issuer!, decision.enforcement.verdict);
  // From here the nonce is consumed: a dependency that fails now (the anchor read, the ledger's
  // note, the EvidenceChain, the registry) is 503 as anywhere, and the answer says the nonce is
  // spent, so the caller knows a retry of this receipt would only be a replay (unless it is the
  // same call with the same Idempotency-Key, which is answered as that call's retry).
  try {
    // CCS §14: the hop's signing key (the one the signature verified under, by fingerprint: a kid may
    // have named other keys, and the anchor may be re-pinned meanwhile) is noted on its issuer's
    // ledger before the hop lands, so a revocation of that key finds this chain; a key revoked
    // meanwhile is refused here.
    const issuer = decision.issuer!;
    if (signedBy === null) throw new Error("a verified receipt names no signing key");
    const fingerprint: string = signedBy;
    // The shard count of an issuer never changes, so reading the anchor again is safe for it.
    const pinned = await services.anchors.pinned(issuer);
    if (!pinned) return c.json({ error: { code: "UNTRUSTED_ISSUER", detail: `issuer ${issuer} was unpinned while the hop was judged` }, nonce_consumed: decision.nonce_consumed }, 422);
    const noted = await services.ledgers.noteKeyUse(issuer, pinned.ledgerShards, fingerprint, { kind: "chain", ref: chainId, at: Math.floor(services.now()) });
    if (noted.revoked) return c.json({ error: { code: "ANCHOR_REVOKED", detail: `key ${decision.kid} of ${issuer} was revoked` }, nonce_consumed: decision.nonce_consumed }, 422);
    const hop = { hop_count: entry.hop_count, previous_receipt_hash: previous, runtime_context: entry.runtime_context, receipt_hash: decision.receipt_hash!, trace_id: entry.receipt.trace_id as string, key_fingerprint: fingerprint };
    const result = await withTimeout(chainStub(c, chainId).append(chainId, party, hop, retry) as Promise<AppendResult>, timeout, "evidence chain");
    // Only reached when the registry lagged behind the EvidenceChain: the nonce was claimed by then, and the answer says so.
    if (result.kind === "not-owned") {
      const refused = notOwned(chainId);
      return c.json({ error: { code: refused.code, detail: refused.detail }, nonce_consumed: decision.nonce_consumed }, 403);
    }
    if (result.kind === "conflict") return c.json({ error: { code: result.code, detail: result.detail }, chain: shownTo(c, result.state), nonce_consumed: decision.nonce_consumed }, 409);
    // A retried hop 0 is registered when its first attempt's registration did not land.
    if (entry.hop_count === 0 && !registered) {
      await services.chains.register(chainId, { owner: party, created_at: Math.floor(services.now()) });
      countChainStarted(c);
    }
    if (retry) c.header("Idempotent-Replayed", "true");
    return c.json({ appended: true, hop_count: entry.hop_count, receipt_hash: hop.receipt_hash, nonce_consumed: decision.nonce_consumed, ...shownTo(c, result.state), ...(retry ? { idempotent_replay: true as const } : {}) });
  } catch (err) {
    if (!(err instanceof VerifierUnavailable)) throw err;
    return c.json({ error: { code: "VERIFIER_UNAVAILABLE", detail: `${err.dependency} did not answer; failing closed` }, nonce_consumed: decision.nonce_consumed }, 503);
  }
})
  /**
   * The caller's live chain with this deployment's seal over it, as it stands now; an id absent
   * from the registry is 404 unread. A chain holding a hop signed by a key since revoked is
   * answered broken at that hop, and no seal vouches for it.
   */
  .get("/:chain_id", async (c) => {
  const chainId = chainIdOf(c);
  const party = partyScope(c.get("relyingParty"));
  const registered = await c.get("services").chains.get(chainId);
  if (!registered) throw unknownChain(chainId);
  if (registered.owner !== party) throw notOwned(chainId);
  const reading = chainStub(c, chainId).read(chainId) as Promise<ChainState | null>;
  const state = await withTimeout(reading, dependencyTimeout(c.env), "evidence chain");
  if (!state) throw unknownChain(chainId);
  if (state.owner !== party) throw notOwned(chainId);
  // A seal is issued like a receipt: never under this deployment's own key once it is revoked.
  const identity = signingIdentity(c.env);
  if (state.chain_valid) await refuseIfOwnKeyRevoked(c, { identity });
  // Rounded up, never down: a hop may be issued up to the skew ahead of its append, and a seal dated
  // before such a receipt less the skew is refused (FRESHNESS_EXPIRED) by POST /v1/chains/verify.
  const seal = state.chain_valid ? signSeal(state, identity, Math.ceil(c.get("services").now())) : null;
  return c.json({ ...shownTo(c, state), seal });
});
