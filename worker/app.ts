/**
 * The Hono application. Routes are thin: they validate the call, hand the pure protocol code
 * its clock, keys and ledger, and shape the answer. Dependencies are injectable for tests.
 */
import { Hono } from "hono";
import type { Env } from "./env.js";
import { webCryptoVerifier, type SignatureVerifier } from "./protocol/ed25519.js";
import type { Mode } from "./protocol/verify.js";
import { errorResponse } from "./http.js";
import { decisionFlush, dependencyTimeout, journalShards, ledgerShardKey } from "./config.js";
import { DecisionCounter, type FlushPolicy } from "./metrics.js";
import { requestContext } from "./observability.js";
import {
  durableLedgerStub, durableSequences, kvAnchorStore, kvRelyingPartyStore, ledgerClient,
  type AnchorCache, type AnchorStore, type LedgerClient, type LedgerStub, type RelyingPartyCache, type RelyingPartyStore, type SequenceSource,
} from "./stores.js";
import type { InputRule } from "./protocol/issuing/rules/index.js";
import type { ReceiptSigner } from "./protocol/issuing/signer.js";
import { requireIntakeOrAdmin, requireIntakeToken, requireRelyingParty } from "./auth.js";
import { durableJournalStub, journalClient, type JournalClient, type JournalStub } from "./journal-store.js";
import { evidenceRoutes } from "./routes/evidence.js";
import { executionRoutes } from "./routes/execution.js";
import { journalRoutes } from "./routes/journal.js";
import type { RelyingParty } from "./protocol/relying-parties.js";
import { wellKnownRoutes } from "./routes/well-known.js";
import { openApiDocument } from "./contract/openapi.js";
import { adminRoutes } from "./routes/admin.js";
import { issuerRoutes } from "./routes/issuers.js";
import { chainRoutes } from "./routes/chains.js";
import { ecRoutes } from "./routes/ec.js";
import { envelopeRoutes } from "./routes/envelopes.js";
import { receiptRoutes } from "./routes/receipts.js";
import { statusRoutes, type StatusPageCache } from "./routes/status.js";
import { intakeRoutes } from "./routes/intake.js";
import { configRoutes } from "./routes/config.js";
import { usageRoutes } from "./routes/usage.js";
import { logLineExporter, type Exporter } from "./observability.js";

export interface AppOptions {
  /** The clock, in Unix seconds. */
  now?: () => number;
  verifier?: SignatureVerifier;
  /** Replaces the IssuerLedger stubs (fault injection in tests). */
  ledgerStub?: (env: Env) => (name: string) => LedgerStub;
  /** When decision counts are flushed to DecisionStats (else DECISION_FLUSH_MS, else the default). */
  decisionFlush?: FlushPolicy;
  /** Where observability projections go (default: one JSON log line), best-effort after the answer. */
  exporter?: Exporter;
  /** Replaces parts of the issuing path (fault injection in tests). */
  intake?: IntakeOverrides;
  /** Replaces the ReceiptJournal stubs (fault injection in tests). */
  journalStub?: (env: Env) => (name: string) => JournalStub;
}

/** What a test may swap on the issuing path: the clock it signs with, the signer, the sequence source, the input rules. */
export interface IntakeOverrides {
  now?: () => number;
  signer?: ReceiptSigner;
  nextSequence?: () => Promise<number>;
  inputRules?: readonly InputRule[];
}

export interface Services {
  now: () => number;
  verifier: SignatureVerifier;
  anchors: AnchorStore;
  ledgers: LedgerClient;
  relyingParties: RelyingPartyStore;
  /** This isolate's batched decision counts. */
  decisions: DecisionCounter;
  /** This isolate's last rendered status page. */
  statusPage: StatusPageCache;
  sequences: SequenceSource;
  intake: IntakeOverrides;
  exporter: Exporter;
  /** A tenant's receipt journal (INTAKE_TENANT for the records intake writes). */
  journal(tenant: string): JournalClient;
}

/** `relyingParty` is set by requireRelyingParty on the routes that take a relying-party token. */
/** `mode` is set once a decision call's mode is known, so an error answer can carry the right decision. */
/** `requestId` and `startedAt` are set for every call (worker/observability.ts). */
export type AppEnv = { Bindings: Env; Variables: { services: Services; relyingParty: RelyingParty; mode: Mode; requestId: string; startedAt: number } };

export function createApp(options: AppOptions = {}): Hono<AppEnv> {
  const now = options.now ?? (() => Date.now() / 1000);
  const verifier = options.verifier ?? webCryptoVerifier();
  const anchorCache: AnchorCache = new Map();
  const partyCache: RelyingPartyCache = new Map();
  // Made on the first call, when the environment (DECISION_FLUSH_MS) is known.
  let decisions: DecisionCounter | undefined;
  const statusPage: StatusPageCache = { entry: null };
  const app = new Hono<AppEnv>();
  app.use(requestContext);
  app.use(async (c, next) => {
    decisions ??= new DecisionCounter(options.decisionFlush ?? decisionFlush(c.env));
    const timeout = dependencyTimeout(c.env);
    const stubFor = (options.ledgerStub ?? durableLedgerStub)(c.env);
    c.set("services", {
      now,
      verifier,
      anchors: kvAnchorStore(c.env, timeout, anchorCache),
      ledgers: ledgerClient(stubFor, timeout, ledgerShardKey(c.env)),
      relyingParties: kvRelyingPartyStore(c.env, timeout, partyCache),
      decisions,
      statusPage,
      sequences: durableSequences(c.env, timeout),
      intake: options.intake ?? {},
      exporter: options.exporter ?? logLineExporter,
      journal: (tenant) => journalClient((options.journalStub ?? durableJournalStub)(c.env), tenant, journalShards(c.env), timeout),
    });
    await next();
  });
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/openapi.json", (c) => c.json(openApiDocument()));
  app.route("/", statusRoutes);
  app.route("/.well-known", wellKnownRoutes);
  for (const path of ["/v1/receipts/verify", "/v1/envelopes/verify", "/v1/chains/*", "/v1/usage", "/v1/usage/*", "/v1/costs/*"]) app.use(path, requireRelyingParty);
  app.use("/v1/intake", requireIntakeToken);
  for (const path of ["/v1/receipts/:trace_id/start", "/v1/receipts/:trace_id/finalize"]) app.use(path, requireIntakeToken);
  for (const path of ["/v1/receipts/:trace_id/reconcile", "/v1/evidence", "/v1/evidence/*"]) app.use(path, requireIntakeOrAdmin);
  app.use("/v1/journal/*", requireRelyingParty);
  app.route("/v1/intake", intakeRoutes);
  app.route("/v1/receipts", executionRoutes);
  app.route("/v1/evidence", evidenceRoutes);
  app.route("/v1/journal", journalRoutes);
  app.route("/v1/config", configRoutes);
  app.route("/v1/receipts", receiptRoutes);
  app.route("/v1/envelopes", envelopeRoutes);
  app.route("/v1/chains", chainRoutes);
  app.route("/v1", ecRoutes);
  app.route("/v1", usageRoutes);
  app.route("/v1/issuers", issuerRoutes);
  app.route("/v1/admin", adminRoutes);
  app.notFound((c) => c.json({ error: { code: "NOT_FOUND", detail: `no route ${c.req.method} ${new URL(c.req.url).pathname}` } }, 404));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}
