/**
 * The Hono application. Routes are thin: they validate the call, hand the pure protocol code
 * its clock, keys and ledger, and shape the answer. Dependencies are injectable for tests.
 */
import { durableAdminRegistry, type AdminRegistryCalls } from "./admin-registry.js";
import { Hono } from "hono";
import type { Env } from "./env.js";
import { webCryptoVerifier, type SignatureVerifier } from "./protocol/ed25519.js";
import type { Mode } from "./protocol/verify.js";
import { ApiError, errorResponse } from "./http.js";
import { decisionFlush, dependencyTimeout, journalShards, ledgerShardKey, reviewThreshold } from "./config.js";
import { DecisionCounter, type FlushPolicy } from "./metrics.js";
import { requestContext } from "./observability.js";
import {
  durableLedgerStub, durableSequences, kvAnchorStore, kvChainRegistry, kvRelyingPartyStore, ledgerClient,
  type AnchorCache, type AnchorStore, type ChainRegistry, type LedgerClient, type LedgerStub, type RelyingPartyCache, type RelyingPartyStore, type SequenceSource,
} from "./stores.js";
import type { InputRule } from "./protocol/issuing/rules/index.js";
import type { ReceiptSigner } from "./protocol/issuing/signer.js";
import type { StoredChallenge } from "../durable-objects/intake-challenges.js";
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
import type { IssuerViewCache } from "./routes/issuers.js";
import { intakeRoutes } from "./routes/intake.js";
import { configRoutes } from "./routes/config.js";
import { usageRoutes } from "./routes/usage.js";
import { logLineExporter, writeLogLine, type Exporter } from "./observability.js";
import { kvManifestStore, type ConfigCache, type ManifestStore } from "./manifest-store.js";
import { manifestRoutes } from "./routes/manifests.js";
import { challengeRoutes } from "./routes/challenges.js";

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
  /** Where each decision's log line is written (default: console.log). */
  logLine?: (line: string) => void;
  /** Replaces parts of the issuing path (fault injection in tests). */
  intake?: IntakeOverrides;
  /** Replaces the ReceiptJournal stubs (fault injection in tests). */
  journalStub?: (env: Env) => (name: string) => JournalStub;
  /** CCS 13.7's allow-only count (else REVIEW_ALLOW_ONLY_THRESHOLD, else 10,000). */
  reviewThreshold?: number;
}

/** What a test may swap on the issuing path: the clock it signs with, the signer, the sequence source, the input rules. */
export interface IntakeOverrides {
  now?: () => number;
  signer?: ReceiptSigner;
  nextSequence?: () => Promise<number>;
  inputRules?: readonly InputRule[];
  /** Replaces the IntakeChallenges write that opens a challenge (fault injection in tests). */
  openChallenge?: (record: StoredChallenge, attempt: string) => Promise<unknown>;
  /** Replaces confirming the challenge of the admission the journal recorded (tests: a store that fails). */
  confirmChallenge?: (record: StoredChallenge, attempt: string) => Promise<unknown>;
  /** Replaces the IntakeChallenges write that marks a challenge answered (fault injection in tests). */
  markAnswered?: (traceId: string) => Promise<void>;
}

export interface Services {
  now: () => number;
  verifier: SignatureVerifier;
  anchors: AnchorStore;
  ledgers: LedgerClient;
  relyingParties: RelyingPartyStore;
  /** The admin writes of relying-party and anchor records, run one at a time (worker/admin-registry.ts). */
  registry: AdminRegistryCalls;
  /** Which live chains exist and whose they are, read before any EvidenceChain is addressed. */
  chains: ChainRegistry;
  /** This isolate's batched decision counts. */
  decisions: DecisionCounter;
  /** This isolate's last rendered status page. */
  statusPage: StatusPageCache;
  /** The issuer view's ledger state and review flag, kept a few seconds per issuer (worker/routes/issuers.ts). */
  issuerViews: IssuerViewCache;
  sequences: SequenceSource;
  /** Configuration history and the manifests receipts bound. */
  manifests: ManifestStore;
  intake: IntakeOverrides;
  exporter: Exporter;
  /** Writes one decision log line. */
  logLine: (line: string) => void;
  /** A tenant's receipt journal (INTAKE_TENANT for the records intake writes). */
  journal(tenant: string): JournalClient;
  /** CCS 13.7's allow-only count. */
  reviewThreshold: number;
}

/** `relyingParty` is set by requireRelyingParty on the routes that take a relying-party token. */
/** `mode` is set once a decision call's mode is known, so an error answer can carry the right decision. */
/** `requestId` and `startedAt` are set for every call (worker/observability.ts). */
export type AppEnv = { Bindings: Env; Variables: { services: Services; relyingParty: RelyingParty; mode: Mode; requestId: string; startedAt: number } };

export function createApp(options: AppOptions = {}) {
  const now = options.now ?? (() => Date.now() / 1000);
  const verifier = options.verifier ?? webCryptoVerifier();
  const anchorCache: AnchorCache = new Map();
  const partyCache: RelyingPartyCache = new Map();
  const configCache: ConfigCache = new Map();
  const configsRecorded = new Set<string>();
  // Made on the first call, when the environment (DECISION_FLUSH_MS) is known.
  let decisions: DecisionCounter | undefined;
  const statusPage: StatusPageCache = { entry: null };
  const issuerViews: IssuerViewCache = new Map();
  // The services depend on the environment alone, so they are built once per environment object
  // (workerd hands every request of an isolate the same one), not once per request.
  const servicesByEnv = new WeakMap<Env, Services>();
  const buildServices = (env: Env): Services => {
    decisions ??= new DecisionCounter(options.decisionFlush ?? decisionFlush(env));
    const timeout = dependencyTimeout(env);
    const stubFor = (options.ledgerStub ?? durableLedgerStub)(env);
    const anchors = kvAnchorStore(env, timeout, anchorCache);
    const registry = durableAdminRegistry(env, timeout);
    return {
      now,
      verifier,
      anchors,
      manifests: kvManifestStore(env, timeout, anchors, configCache, configsRecorded),
      ledgers: ledgerClient(stubFor, timeout, ledgerShardKey(env)),
      relyingParties: kvRelyingPartyStore(env, timeout, partyCache, { create: registry.createParty, rotate: registry.rotateParty, delete: registry.deleteParty }),
      registry,
      chains: kvChainRegistry(env, timeout),
      decisions,
      statusPage,
      issuerViews,
      sequences: durableSequences(env, timeout),
      intake: options.intake ?? {},
      exporter: options.exporter ?? logLineExporter,
      logLine: options.logLine ?? writeLogLine,
      journal: (tenant) => journalClient((options.journalStub ?? durableJournalStub)(env), tenant, journalShards(env), timeout),
      reviewThreshold: options.reviewThreshold ?? reviewThreshold(env),
    };
  };
  const app = new Hono<AppEnv>()
    .use(requestContext)
    .use(async (c, next) => {
      let services = servicesByEnv.get(c.env);
      if (!services) {
        services = buildServices(c.env);
        servicesByEnv.set(c.env, services);
      }
      c.set("services", services);
      await next();
    })
    .get("/healthz", (c) => c.json({ ok: true as const }))
    .get("/openapi.json", (c) => c.json(openApiDocument()))
    .route("/", statusRoutes)
    .route("/.well-known", wellKnownRoutes)
    // Who may call what: relying parties verify and keep evidence, agent runtimes submit Commands.
    // A wildcard `X/*` also matches `X` itself in Hono: registering both ran the check twice there.
    .use("/v1/receipts/verify", requireRelyingParty)
    .use("/v1/envelopes/verify", requireRelyingParty)
    .use("/v1/chains/*", requireRelyingParty)
    .use("/v1/usage/*", requireRelyingParty)
    .use("/v1/costs/*", requireRelyingParty)
    .use("/v1/profiles/*", requireRelyingParty)
    .use("/v1/intake/*", requireIntakeToken)
    .use("/v1/receipts/:trace_id/start", requireIntakeToken)
    .use("/v1/receipts/:trace_id/finalize", requireIntakeToken)
    .use("/v1/receipts/:trace_id/reconcile", requireIntakeOrAdmin)
    .use("/v1/evidence/*", requireIntakeOrAdmin)
    .use("/v1/journal/*", requireRelyingParty)
    .route("/v1/intake", intakeRoutes)
    .route("/v1/intake", challengeRoutes)
    .route("/v1/receipts", executionRoutes)
    .route("/v1/evidence", evidenceRoutes)
    .route("/v1/journal", journalRoutes)
    .route("/v1/config", configRoutes)
    .route("/v1/receipts", receiptRoutes)
    .route("/v1/envelopes", envelopeRoutes)
    .route("/v1/chains", chainRoutes)
    .route("/v1", ecRoutes)
    .route("/v1", usageRoutes)
    .route("/v1/issuers", issuerRoutes)
    .route("/v1/admin", adminRoutes)
    .route("/v1", manifestRoutes);
  // In the one error shape: on a decision route's path (a method it does not serve) with the decision fields too, as its 401 has.
  app.notFound((c) => errorResponse(c, new ApiError(404, "NOT_FOUND", `no route ${c.req.method} ${new URL(c.req.url).pathname}`)));
  app.onError((err, c) => errorResponse(c, err));
  return app;
}

/** The app's routes and their answers, for Hono's typed client (`hc<AppType>`, worker/client.ts). */
export type AppType = ReturnType<typeof createApp>;
