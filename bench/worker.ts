/**
 * Bench-only entry (bench/wrangler.toml): serves the real app and adds
 *   POST /bench/setup      pre-signed inputs, decoded and keys imported outside any timing
 *   POST /bench/run        ?case=…&n=… runs n iterations of one case (timed from outside:
 *                          workerd's clock does not advance during pure CPU work)
 *   POST /bench/baseline   one Durable Object round trip and nothing else
 *   GET  /bench/ledger     IssuerLedger stats of ?name=
 */
import { DurableObject } from "cloudflare:workers";
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js";
import { jwtVerify } from "jose";
import { createApp } from "../worker/app.js";
import type { Env } from "../worker/env.js";
import type { LedgerStub } from "../worker/stores.js";
import { pinnedIssuer, type AnchorRecord, type PinnedIssuer } from "../worker/protocol/anchors.js";
import { verifyChain, type ChainDocument } from "../worker/protocol/chain.js";
import type { ChainSeal } from "../worker/protocol/chain-seal.js";
import { buildBundle, replayBundle, type Bundle, type ExecutionRow } from "../worker/protocol/ec/bundle.js";
import { asciiCanonical, DOMAINS } from "../worker/protocol/ec/canonical.js";
import type { Corpus } from "../worker/protocol/ec/corpus.js";
import { EC_SCHEMA_VERSION, indexedEvents, type TraceEvent } from "../worker/protocol/ec/events.js";
import { verifyEcReceipt, type EcReceipt } from "../worker/protocol/ec/receipt.js";
import { checkAudience } from "../worker/protocol/checks/audience.js";
import { canonicalRequest, checkBinding, type PresentedRequest } from "../worker/protocol/checks/binding.js";
import { checkFreshness, DEFAULT_FRESHNESS } from "../worker/protocol/checks/freshness.js";
import { checkSignature } from "../worker/protocol/checks/signature.js";
import { jcs, prefixedDigest, sha256Hex } from "../worker/protocol/digest.js";
import { nobleVerifier, webCryptoVerifier, type SignatureVerifier } from "../worker/protocol/ed25519.js";
import { fromHex, toBase64Url } from "../worker/protocol/encoding.js";
import type { ReplayLedger } from "../worker/protocol/ledger.js";
import { canonicalReceipt, parseReceipt, type Receipt } from "../worker/protocol/receipt.js";
import { parseStrictJson } from "../worker/protocol/strict-json.js";
import { verifyReceipt } from "../worker/protocol/verify.js";
import { parseIntake } from "../worker/protocol/issuing/command.js";
import { issueAdmission } from "../worker/protocol/issuing/lifecycle.js";
import { issuing } from "../worker/config.js";
import { VerifyCall } from "../worker/contract/schemas.js";
import { validateBody } from "../worker/http.js";
import type { Decision } from "../worker/protocol/verify.js";

export { AdminRegistry } from "../durable-objects/admin-registry.js";
export { DecisionStats } from "../durable-objects/decision-stats.js";
export { EvidenceChain } from "../durable-objects/evidence-chain.js";
export { IssuerLedger } from "../durable-objects/issuer-ledger.js";
export { IssuingSequence } from "../durable-objects/issuing-sequence.js";
export { UsageLedger } from "../durable-objects/usage-ledger.js";
export { ReceiptJournal } from "../durable-objects/receipt-journal.js";

export class BenchEcho extends DurableObject {
  ping(): number {
    return 1;
  }
}

interface BenchEnv extends Env {
  BENCH_ECHO: DurableObjectNamespace<BenchEcho>;
}

interface Inputs {
  bodyText: string;
  /** A 16-hop chain of receipts by the same issuer. */
  chain: ChainDocument;
  /** The issuer's seal over it (the issuer is pinned as a chain sealer). */
  seal: ChainSeal;
  /** The EC-Agent replay fixture (vectors/ec-agent/bundle.json: 17 receipts over 6 executions). */
  bundle: unknown;
  anchor: AnchorRecord;
  jwt: string;
  jwtIssuer: string;
  audience: string;
  /** The bench relying party's token, registered by the runner before setup. */
  rpToken: string;
  now: number;
  /** A Command as an agent runtime sends it to POST /v1/intake. */
  intakeText: string;
}

let inputs: Inputs;
/** Inputs of the sizes the profile digests: a params or request text, and a whole receipt. */
const digestInputs = { small: new TextEncoder().encode("x".repeat(120)), large: new TextEncoder().encode("y".repeat(1300)) };
/**
 * The native work one full verification cannot avoid, apart from its signature: the body's
 * `JSON.parse`, the UTF-8 encoding of the four texts it hashes or signs (signed bytes, whole
 * receipt, params, request), and the three SHA-256 digests of those bytes (the texts and bytes
 * are prepared at setup, so these cases time the native calls alone).
 */
const floor = { texts: [] as string[], bytes: [] as Uint8Array[] };
const floorEncoder = new TextEncoder();
/** The call body as the route parses it, and the decision it answers (for the route's own stages). */
let callBody: unknown;
let decision: Decision;
const bodyDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
let signKey: CryptoKey;
let intakeSequence = 0;

/** One admission receipt issued by the pure path, from the body text, with an in-memory sequence. */
async function issueOne(): Promise<unknown> {
  const { signer, context } = await issuing(benchEnv);
  const intake = parseIntake(parseStrictJson(inputs.intakeText));
  return issueAdmission(intake, inputs.audience, context, { now: () => inputs.now, randomBytes: (n) => crypto.getRandomValues(new Uint8Array(n)), nextSequence: async () => ++intakeSequence, signer });
}
let pinned: PinnedIssuer;
let rawKey: CryptoKey;
let receipt: Receipt;
let request: PresentedRequest;
let signedBytes: Uint8Array;
let signature: Uint8Array;
/** One EC-Agent receipt with its run's corpus and events, and a bundle of one execution with one receipt. */
let ec: { receipt: EcReceipt; corpus: Corpus; events: TraceEvent[]; oneBundle: Bundle };
const webcrypto = webCryptoVerifier();
const claimingLedger: ReplayLedger = {
  claim: async () => ({ revoked: false, replay: null, consumed: true }),
  inspect: async () => ({ revoked: false, replay: null, consumed: false }),
};

async function full(verifier: SignatureVerifier): Promise<boolean> {
  const body = parseStrictJson(inputs.bodyText) as { receipt: unknown; audience: string; request: PresentedRequest };
  const d = await verifyReceipt(
    body.receipt,
    { audience: body.audience, mode: "enforce", now: inputs.now, policy: DEFAULT_FRESHNESS, request: body.request },
    { anchors: async () => pinned, verifier, ledger: () => claimingLedger },
  );
  return d.valid;
}

const CASES: Record<string, () => Promise<unknown> | unknown> = {
  raw: () => crypto.subtle.verify({ name: "Ed25519" }, rawKey, signature, signedBytes),
  full: () => full(webcrypto),
  noble: () => full(nobleVerifier),
  jose: () => jwtVerify(inputs.jwt, rawKey, { audience: inputs.audience, issuer: inputs.jwtIssuer, currentDate: new Date(inputs.now * 1000) }),
  "chain-16-full": () => verifyChain(inputs.chain, { now: inputs.now, policy: DEFAULT_FRESHNESS }, { anchors: async () => pinned, verifier: webcrypto }),
  "chain-16-spot": () => verifyChain(inputs.chain, { spot: 7, seal: inputs.seal, now: inputs.now, policy: DEFAULT_FRESHNESS }, { anchors: async () => pinned, verifier: webcrypto }),
  "bundle-replay": () => replayBundle(inputs.bundle),
  "intake:raw-sign": () => crypto.subtle.sign({ name: "Ed25519" }, signKey, signedBytes),
  "intake:issue": () => issueOne(),
  // The paper's timing table: serialising one receipt and its trace, verifying one receipt online, replaying one bundle.
  "ec-serialise": () => asciiCanonical(ec.receipt) + asciiCanonical({ domain: DOMAINS.trace, events: indexedEvents(ec.events), schema_version: EC_SCHEMA_VERSION }),
  "ec-verify": () => verifyEcReceipt(ec.receipt, ec.corpus, ec.events),
  "ec-replay-1": () => replayBundle(ec.oneBundle),
  "digest:subtle-120B": () => crypto.subtle.digest("SHA-256", digestInputs.small),
  "digest:noble-120B": () => nobleSha256(digestInputs.small),
  "digest:subtle-1300B": () => crypto.subtle.digest("SHA-256", digestInputs.large),
  "digest:noble-1300B": () => nobleSha256(digestInputs.large),
  "stage:parse": () => parseStrictJson(inputs.bodyText),
  "stage:schema": () => parseReceipt(receipt),
  "stage:canonical": () => canonicalReceipt(receipt),
  "stage:freshness+audience": () => [checkFreshness(receipt, inputs.now, DEFAULT_FRESHNESS), checkAudience(receipt, inputs.audience)],
  "stage:receipt_hash": () => prefixedDigest(canonicalReceipt(receipt).fullText),
  "stage:params_digest": () => sha256Hex(jcs(request.params)),
  "stage:request_hash": () => prefixedDigest(jcs(request)),
  "stage:signature": () => checkSignature(receipt, signedBytes, pinned.keys, webcrypto, inputs.now),
  "stage:binding": () => checkBinding(receipt, { request }),
  "native:json-parse": () => JSON.parse(inputs.bodyText),
  "native:utf8": () => floor.texts.map((t) => floorEncoder.encode(t)),
  "native:digests": async () => {
    const [params, req, whole] = floor.bytes;
    const pending = [crypto.subtle.digest("SHA-256", params), crypto.subtle.digest("SHA-256", req), crypto.subtle.digest("SHA-256", whole)];
    return [await pending[0], await pending[1], await pending[2]];
  },
  // The route's own costs around the verification it wraps.
  "route:dispatch": async () => (await statelessApp.request("/healthz", { method: "GET" }, benchEnv, benchCtx)).text(),
  "route:auth": () => sha256Hex(inputs.rpToken),
  "route:body-read": async () => bodyDecoder.decode(await new Request("https://bench.example/", { method: "POST", body: inputs.bodyText }).arrayBuffer()),
  "route:call-validation": () => validateBody(VerifyCall, callBody),
  "route:answer": () => JSON.stringify(decision),
  "route:log-line": () => console.log(JSON.stringify({ event: "decision", request_id: "0123456789abcdef-LHR", route: "/v1/receipts/verify", mode: decision.mode, issuer: decision.issuer, issuer_pinned: true, decision: decision.decision, valid: decision.valid, codes: [], status: 200, latency_ms: 0 })),
  "route": () => routeOnce(statelessApp),
  "route:without-log-write": () => routeOnce(quietApp),
};


const app = createApp();

/** One enforce call through the whole route, in this isolate, with the ledger answering at once. */
async function routeOnce(through: typeof app): Promise<string> {
  const headers = { "content-type": "application/json", "content-length": String(inputs.bodyText.length), authorization: `Bearer ${inputs.rpToken}` };
  return (await through.request("/v1/receipts/verify", { method: "POST", body: inputs.bodyText, headers }, benchEnv, benchCtx)).text();
}

/** The same app with a ledger that answers at once: the enforce route minus its Durable Object. */
const noLedger: LedgerStub = {
  claim: async () => ({ revoked: false, replay: null, consumed: true }),
  inspect: async () => ({ revoked: false, replay: null, consumed: false }),
  revoke: async (fingerprint, kid, at) => ({ fingerprint, kid, revoked_at: at }),
  revocations: async () => [],
  forgetKeys: async () => {},
  resetSequence: async () => ({ previous_highest: null }),
  anchorState: async () => ({ revoked: [], sequence_resets: { resets: [], total: 0, next: null } }),
  stats: async () => ({ nonces: 0, database_bytes: 0, rows_written: 0, windows: [], revoked: [] }),
  noteKeyUse: async () => ({ revoked: false }),
  withdraw: async () => 0,
  keyUses: async () => [],
};
const statelessApp = createApp({ ledgerStub: () => () => noLedger });
/** The same again with the decision log line built but not written (its console write is timed as route:log-line). */
const quietApp = createApp({ ledgerStub: () => () => noLedger, logLine: () => {} });

let benchEnv: Env;
let benchCtx: ExecutionContext;

app.post("/bench/setup", async (c) => {
  inputs = await c.req.json<Inputs>();
  benchEnv = c.env;
  benchCtx = c.executionCtx;
  pinned = pinnedIssuer(inputs.anchor);
  rawKey = await crypto.subtle.importKey("raw", pinned.keys[0].raw, { name: "Ed25519" }, false, ["verify"]);
  const { identity } = await issuing(c.env);
  signKey = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", d: toBase64Url(identity.seed), x: toBase64Url(identity.publicKey) }, { name: "Ed25519" }, false, ["sign"]);
  const body = JSON.parse(inputs.bodyText);
  receipt = body.receipt;
  request = body.request;
  signedBytes = canonicalReceipt(receipt).signedBytes;
  signature = fromHex(receipt.signature)!;
  const { fullText } = canonicalReceipt(receipt);
  const paramsText = jcs(request.params);
  floor.texts = [paramsText, canonicalRequest(request, paramsText), fullText, new TextDecoder().decode(signedBytes)];
  floor.bytes = floor.texts.map((t) => floorEncoder.encode(t));
  callBody = parseStrictJson(inputs.bodyText);
  decision = await verifyReceipt(body.receipt, { audience: body.audience, mode: "enforce", now: inputs.now, policy: DEFAULT_FRESHNESS, request: body.request }, { anchors: async () => pinned, verifier: webcrypto, ledger: () => claimingLedger });
  const rows = (inputs.bundle as Bundle).rows;
  const run3 = rows["run-003"] as ExecutionRow;
  const run5 = rows["run-005"] as ExecutionRow;
  const corpus = rows.corpus as Corpus;
  ec = {
    receipt: run3.receipts[2].receipt,
    corpus,
    events: run3.events,
    oneBundle: await buildBundle(corpus, [{ ...run5, receipts: run5.receipts.map((r) => r.receipt) }]),
  };
  const checks: Record<string, unknown> = {};
  for (const [name, run] of Object.entries(CASES)) checks[name] = await run();
  const chainOk = (checks["chain-16-full"] as { chain_valid: boolean }).chain_valid && (checks["chain-16-spot"] as { chain_valid: boolean }).chain_valid;
  const bundleOk =
    (checks["bundle-replay"] as { decision: string }).decision === "match" &&
    (checks["ec-replay-1"] as { decision: string }).decision === "match" &&
    (checks["ec-verify"] as { valid: boolean }).valid;
  if (checks.raw !== true || checks.full !== true || checks.noble !== true || !chainOk || !bundleOk) return c.json({ ok: false, checks }, 500);
  return c.json({ ok: true, cases: Object.keys(CASES) });
});

app.post("/bench/run", async (c) => {
  const run = CASES[c.req.query("case") ?? ""];
  const n = Number(c.req.query("n") ?? 0);
  if (!run) return c.json({ error: "unknown case" }, 400);
  // A restarted isolate has lost its inputs: the runner sets them up again and retries.
  if (!inputs) return c.json({ error: "not set up" }, 409);
  for (let i = 0; i < n; i++) await run();
  return c.json({ n });
});

app.post("/bench/stateless/v1/receipts/verify", (c) => {
  const url = new URL(c.req.url);
  url.pathname = "/v1/receipts/verify";
  return statelessApp.fetch(new Request(url, c.req.raw), c.env, c.executionCtx);
});

/** The real enforce route, ledger included, with its decision log line built but not written. */
const unloggedApp = createApp({ logLine: () => {} });
app.post("/bench/unlogged/v1/receipts/verify", (c) => {
  const url = new URL(c.req.url);
  url.pathname = "/v1/receipts/verify";
  return unloggedApp.fetch(new Request(url, c.req.raw), c.env, c.executionCtx);
});

app.post("/bench/baseline", async (c) => {
  const env = c.env as BenchEnv;
  await c.req.arrayBuffer();
  const ping = await env.BENCH_ECHO.get(env.BENCH_ECHO.idFromName("baseline")).ping();
  return c.json({ ok: ping === 1 });
});

/** One IssuerLedger claim of a fresh nonce and nothing else: the ledger's share of an enforce call (kept an hour, so no purge runs during a bench and the bytes a claim costs stay readable). */
let claims = 0;
app.post("/bench/claim", async (c) => {
  await c.req.arrayBuffer();
  const nonce = (++claims).toString(16).padStart(32, "0");
  const ledger = c.env.ISSUER_LEDGER.get(c.env.ISSUER_LEDGER.idFromName(`bench-claim-${c.req.query("run") ?? ""}`));
  const answer = await ledger.claim({ issuer: "https://bench-claim.example", nonce, sequence: claims, fingerprint: "0".repeat(64), sequencePolicy: "repeat", retainUntil: Date.now() / 1000 + 3600, retryTag: null });
  return c.json({ decision: answer.consumed ? "accept" : "reject" });
});

/**
 * The two-phase path of one Command, end to end through the service's own routes: intake (reserve,
 * judge, sign, append), start (claim) and finalize (fence, OUT rules, response_hash, sign, append).
 * One HTTP request here is one finalised receipt; `accept` when the final receipt was signed.
 */
app.post("/bench/two-phase", async (c) => {
  const text = await c.req.text();
  const traceId = (JSON.parse(text) as { trace_id: string }).trace_id;
  const call = (path: string, body: string) =>
    app.fetch(new Request(new URL(path, c.req.url), { method: "POST", headers: { "content-type": "application/json", authorization: c.req.header("authorization") ?? "" }, body }), c.env, c.executionCtx);
  const admitted = await call("/v1/intake", text);
  if (admitted.status !== 200) return c.json({ decision: "reject", step: "intake", status: admitted.status });
  const started = await call(`/v1/receipts/${traceId}/start`, "{}");
  if (started.status !== 200) return c.json({ decision: "reject", step: "start", status: started.status });
  const { fence } = (await started.json()) as { fence: number };
  const finalised = await call(`/v1/receipts/${traceId}/finalize`, JSON.stringify({ fence, response: { results: ["sunny"] } }));
  return c.json({ decision: finalised.status === 200 ? "accept" : "reject", step: "finalize", status: finalised.status });
});

/** Rows written by the journal shards of the intake tenant since they started. */
app.get("/bench/journal", async (c) => {
  const stats = await Promise.all(Array.from({ length: 8 }, (_, i) => c.env.RECEIPT_JOURNAL.get(c.env.RECEIPT_JOURNAL.idFromName(`ccs#${i}`)).stats()));
  return c.json({ records: stats.reduce((n, s) => n + s.records, 0), rows_written: stats.reduce((n, s) => n + s.rows_written, 0) });
});

app.get("/bench/ledger", async (c) => {
  const name = c.req.query("name") ?? "";
  return c.json(await c.env.ISSUER_LEDGER.get(c.env.ISSUER_LEDGER.idFromName(name)).stats());
});

export default app;

