import type { EvidenceChain } from "../durable-objects/evidence-chain.js";
import type { DecisionStats } from "../durable-objects/decision-stats.js";
import type { IssuerLedger } from "../durable-objects/issuer-ledger.js";
import type { IssuingSequence } from "../durable-objects/issuing-sequence.js";
import type { UsageLedger } from "../durable-objects/usage-ledger.js";
import type { ReceiptJournal } from "../durable-objects/receipt-journal.js";

/** Bindings and variables of the Worker (wrangler.toml, .dev.vars). */
export interface Env {
  ANCHORS: KVNamespace;
  ISSUER_LEDGER: DurableObjectNamespace<IssuerLedger>;
  EVIDENCE_CHAIN: DurableObjectNamespace<EvidenceChain>;
  DECISION_STATS: DurableObjectNamespace<DecisionStats>;
  /** The sequence counter of each issuing key, by key fingerprint. */
  ISSUING_SEQUENCE: DurableObjectNamespace<IssuingSequence>;
  /** One UsageLedger per relying party: the usage, cost and reconciliation evidence it stored. */
  USAGE_LEDGER: DurableObjectNamespace<UsageLedger>;
  /** The tool receipt journal (the CCS local evidence store): JOURNAL_SHARDS objects per tenant. */
  RECEIPT_JOURNAL: DurableObjectNamespace<ReceiptJournal>;
  /** Shards of each tenant's journal (default 8). Fixed for the deployment's life: records are found by it. */
  JOURNAL_SHARDS?: string;
  /** Default execution lease in seconds of POST /v1/receipts/{trace_id}/start (default 300). */
  JOURNAL_LEASE_SECONDS?: string;
  /** Comma-separated audiences this deployment serves. */
  AUDIENCES: string;
  /** This deployment's organisation (an https:// URI): cross-org envelopes must name it as receiver_org_id. */
  ORG_ID?: string;
  /** The https:// URI this deployment signs receipts and chain seals as. */
  ISSUER?: string;
  /** Secret: the 32-byte Ed25519 seed of the signing key, 64 hex. */
  SIGNING_KEY?: string;
  SIGNING_KID?: string;
  /** Secret: the key of the legacy HMAC field (`receipt`), hex, at least 32 bytes. */
  LEGACY_HMAC_KEY?: string;
  /** Optional JSON array of `{kid, public_key}`: retired keys still published at /.well-known/ccs-issuer. */
  PUBLISHED_KEYS?: string;
  /** Secret: bearer token agent runtimes present to POST /v1/intake. Intake is closed without it. */
  INTAKE_TOKEN?: string;
  /** Seconds from issued_at to expires_at of issued receipts (default 60). */
  RECEIPT_TTL?: string;
  /** Milliseconds intake may take before it fails closed with INTAKE_TIMEOUT (default 5000). */
  INTAKE_TIMEOUT_MS?: string;
  /** The verifier policy floor: none, tls, authenticated, mutual-tls or attested (default tls). */
  POLICY_FLOOR?: string;
  /** Optional comma-separated subset of the sixteen rules to enable (default: all). */
  RULES?: string;
  /** Optional comma-separated config hashes this deployment may issue under (SEC-008). */
  PINNED_CONFIG_HASHES?: string;
  /** Bearer token of the admin routes. */
  ADMIN_TOKEN?: string;
  /**
   * Secret HMAC key (at least 32 characters) choosing a sharded issuer's ledger shard from the
   * nonce. Fixed for the deployment's life, like `ledger_shards`: changing it moves nonces to
   * other shards and reopens replay for receipts still fresh. Without it, sharded issuers are
   * refused (500 SERVICE_MISCONFIGURED); one-shard issuers need none.
   */
  LEDGER_SHARD_KEY?: string;
  /** Optional overrides, in seconds. */
  MAX_RECEIPT_LIFETIME?: string;
  MAX_CLOCK_SKEW?: string;
  /** Milliseconds a KV read or a ledger RPC may take before the verifier fails closed. */
  DEPENDENCY_TIMEOUT_MS?: string;
  /** Milliseconds an isolate holds decision counts before flushing them (default 10000; 0 flushes every decision, for tests). */
  DECISION_FLUSH_MS?: string;
}
