/**
 * CCS §12.2 enforcement validation of one receipt. Pure: time, keys and replay state are
 * parameters. Stateless checks run first; the ledger is asked to consume the nonce only when
 * every one of them passed, so a forger cannot burn an honest nonce.
 */
import type { PinnedIssuer } from "./anchors.js";
import { failure, type Failure } from "./codes.js";
import { prefixedDigest, sha256Hex } from "./digest.js";
import type { SignatureVerifier } from "./ed25519.js";
import { DEFAULT_SEQUENCE_POLICY, type LedgerAnswer, type LedgerQuery, type ReplayLedger } from "./ledger.js";
import { canonicalReceipt, parseReceipt, type Receipt } from "./receipt.js";
import { checkAudience } from "./checks/audience.js";
import { checkBinding, type Presented } from "./checks/binding.js";
import { checkFreshness, grantedSkew, type FreshnessPolicy } from "./checks/freshness.js";
import { mapOutcome, type Enforcement, type EnforcementAction, type ReportedOutcome } from "./checks/outcome.js";
import { checkSignature } from "./checks/signature.js";
import { configHashPinned } from "./issuing/rules/sec-008.js";
import { manifestStaleness, type ManifestBinding } from "./manifest/staleness.js";

export type Mode = "enforce" | "audit";

/**
 * The one field a gate acts on. `accept`: enforce mode, valid evidence, verdict allow, outcome
 * not in doubt. `reject`: any critical failure, or valid evidence of a deny. `defer`: valid
 * evidence of an escalate, or of an allow whose outcome is reported indeterminate/unknown (the
 * conservative path). `audit`: every audit-mode answer, whatever it found; it authorises nothing.
 */
export type GateDecision = "accept" | "reject" | "defer" | "audit";

export interface Decision {
  /** The evidence verdict alone: every critical check passed. Not a go-ahead by itself. */
  valid: boolean;
  decision: GateDecision;
  failures: Failure[];
  enforcement: Enforcement;
  receipt_hash: string | null;
  nonce_consumed: boolean;
  mode: Mode;
  /** The Unix seconds the receipt was judged at. */
  checked_at: number;
  issuer: string | null;
  /** The pinned key the signature verified under. */
  kid: string | null;
  /** Present on an enforce call retried with the Idempotency-Key of the call that consumed the nonce. */
  idempotent_replay?: true;
}

export interface VerifyOptions extends Presented {
  /** Enforce mode only: makes a retried call answer what the first one did. */
  idempotency?: Idempotency;
  /**
   * The consumer the receipt must be addressed to (step 2), or null when no consumer is judged:
   * a chain's receipts are each addressed to their own hop's consumer, not to the auditor.
   */
  audience: string | null;
  mode: Mode;
  /**
   * "ignore": a nonce or sequence already seen is not a failure (a chain's receipts were normally
   * consumed by their executors); revocation is still judged. Only audit mode may ignore it,
   * since only audit mode consumes nothing. Default "judge".
   */
  replay?: "judge" | "ignore";
  now: number;
  policy: FreshnessPolicy;
  reportedOutcome?: ReportedOutcome;
  /** Further stateless checks of the context the receipt arrived in (an envelope's, say); their failures also keep the nonce unconsumed. */
  contextChecks?: (r: Receipt, receiptHash: string) => Failure[];
  /** Told the fingerprint of the pinned key the signature verified under (what a caller records the receipt by). */
  onSigned?: (fingerprint: string) => void;
}

/**
 * An enforce call's retry identity: the caller (a relying party), its Idempotency-Key, and the
 * call itself (its route and the digest of its canonical body). The same caller sending the same
 * key with the same call, while the nonce is retained, gets the first call's answer again, byte
 * for byte; the same key with any other call is judged afresh (and so is a replay).
 */
export interface Idempotency {
  caller: string;
  key: string;
  /** The route and `sha256:` digest of the call's canonical body. */
  call: string;
}

/** The tag kept on the nonce row: SHA-256 over caller, key and call, 32 hex. */
export const idempotencyTag = (i: Idempotency): Promise<string> =>
  sha256Hex(`${i.caller}\n${i.key}\n${i.call}`).then((hex) => hex.slice(0, 32));

export interface VerifyDeps {
  /** The issuer's pinned keys and ledger layout, or null when the issuer is not pinned. */
  anchors(issuer: string): Promise<PinnedIssuer | null>;
  verifier: SignatureVerifier;
  ledger(issuer: string, nonce: string, shards: number): ReplayLedger;
  /** The manifest a receipt's configuration bound beside the issuer's current one, when known (MANIFEST_STALE). */
  manifestBinding?(issuer: string, configHash: string): Promise<ManifestBinding | null>;
}

/** A dependency (anchor store, ledger) failed or timed out: the caller must fail closed. */
export class VerifierUnavailable extends Error {
  constructor(readonly dependency: string, cause: unknown) {
    super(`${dependency} unavailable`, { cause });
    this.name = "VerifierUnavailable";
  }
}

/** `work`'s answer, any failure of it (thrown or rejected) as VerifierUnavailable. A plain promise chain: it is on every verification's path. */
export function dependency<T>(name: string, work: () => Promise<T>): Promise<T> {
  const unavailable = (err: unknown) => {
    throw err instanceof VerifierUnavailable ? err : new VerifierUnavailable(name, err);
  };
  try {
    return Promise.resolve(work()).catch(unavailable);
  } catch (err) {
    return Promise.reject(err).catch(unavailable);
  }
}

/** What a gate does with evidence that was judged (CCS Figure 9 action → go/no-go). */
export function gateDecision(mode: Mode, valid: boolean, action: EnforcementAction): GateDecision {
  if (mode === "audit") return "audit";
  if (!valid || action === "block") return "reject";
  return action === "proceed" || action === "proceed_pending_reconciliation" ? "accept" : "defer";
}

export function rejection(failures: Failure[], mode: Mode, now: number): Decision {
  return {
    valid: false,
    decision: gateDecision(mode, false, "block"),
    failures,
    enforcement: { action: "block", verdict: null, outcome_status: null },
    receipt_hash: null,
    nonce_consumed: false,
    mode,
    checked_at: now,
    issuer: null,
    kid: null,
  };
}

function ledgerFailures(answer: LedgerAnswer, kid: string | null, replay: "judge" | "ignore"): Failure[] {
  const out: Failure[] = [];
  if (answer.expired) out.push(failure("FRESHNESS_EXPIRED", answer.expired));
  if (answer.revoked) out.push(failure("ANCHOR_REVOKED", `key ${kid} of this issuer has been revoked`));
  // A withdrawn receipt (CCS §14) is refused whatever the replay mode: it is no replay, nothing consumed it.
  if (answer.withdrawn) out.push(failure("RECEIPT_WITHDRAWN", answer.withdrawn));
  if (answer.replay && replay === "judge") out.push(failure("REPLAY_DETECTED", answer.replay));
  return out;
}

export async function verifyReceipt(value: unknown, opts: VerifyOptions, deps: VerifyDeps): Promise<Decision> {
  const parsed = parseReceipt(value);
  if (!parsed.ok) return rejection(parsed.failures, opts.mode, opts.now);
  const r: Receipt = parsed.receipt;
  const { signedBytes, fullText } = canonicalReceipt(r);
  const receiptHash = prefixedDigest(fullText);
  const binding = checkBinding(r, opts);
  const stateless: Failure[] = [...checkFreshness(r, opts.now, opts.policy), ...(opts.audience === null ? [] : checkAudience(r, opts.audience))];
  const pinned = await dependency("anchor store", () => deps.anchors(r.issuer));
  const signature = await checkSignature(r, signedBytes, pinned?.keys ?? null, deps.verifier, opts.now);
  if (signature.fingerprint !== null && opts.onSigned) opts.onSigned(signature.fingerprint);
  stateless.push(...signature.failures, ...(await binding));
  if (pinned && !configHashPinned(r.config_hash, pinned.configHashes)) stateless.push(failure("CONFIG_NOT_PINNED", `config_hash ${r.config_hash} is not pinned for ${r.issuer} (SEC-008)`));
  if (opts.contextChecks) stateless.push(...opts.contextChecks(r, await receiptHash));

  const query: LedgerQuery = {
    issuer: r.issuer,
    nonce: r.nonce,
    sequence: r.sequence ?? null,
    fingerprint: signature.fingerprint,
    sequencePolicy: pinned?.sequencePolicy ?? DEFAULT_SEQUENCE_POLICY,
  };
  // Staleness is asked only of a receipt its issuer signed: a forgery makes nothing be read.
  const bound = deps.manifestBinding && signature.failures.length === 0 ? await dependency("manifest store", () => deps.manifestBinding!(r.issuer, r.config_hash)) : null;
  const staleness = manifestStaleness(bound);
  const stale = staleness ? [staleness] : [];
  let stateful: LedgerAnswer = { revoked: false, replay: null, consumed: false };
  const provisional = mapOutcome(r, stateless.length === 0, opts.reportedOutcome);
  // An unpinned issuer has no ledger: asking one for it would create storage for any name.
  const ledger = pinned ? deps.ledger(r.issuer, r.nonce, pinned.ledgerShards) : null;
  if (ledger && opts.mode === "audit") {
    stateful = await dependency("issuer ledger", () => ledger.inspect(query));
  } else if (ledger && stateless.length === 0) {
    const retainUntil = r.expires_at + grantedSkew(r, opts.policy);
    const retry = opts.idempotency
      ? {
          retryTag: await idempotencyTag(opts.idempotency),
          // What this call answers if its claim lands: kept with the nonce, answered again to a retry.
          answer: JSON.stringify(answer(r, opts, provisional.enforcement, [...provisional.warnings, ...stale], await receiptHash, signature.kid, true)),
        }
      : { retryTag: null };
    stateful = await dependency("issuer ledger", () => ledger.claim({ ...query, retainUntil, ...retry }));
    if (stateful.retried && stateful.answer) return { ...(JSON.parse(stateful.answer) as Decision), idempotent_replay: true };
  }
  const replay = opts.mode === "audit" ? (opts.replay ?? "judge") : "judge";
  const failures = [...stateless, ...ledgerFailures(stateful, signature.kid, replay)];
  const critical = failures.some((f) => f.severity === "CRITICAL");
  const { enforcement, warnings } = critical ? mapOutcome(r, false) : provisional;
  return { ...answer(r, opts, enforcement, [...failures, ...warnings, ...stale], await receiptHash, signature.kid, stateful.consumed), valid: !critical, decision: gateDecision(opts.mode, !critical, enforcement.action) };
}

/** A decision on a judged receipt; `valid`/`decision` as for a receipt with no critical failure (callers override). */
function answer(r: Receipt, opts: VerifyOptions, enforcement: Enforcement, failures: Failure[], receiptHash: string, kid: string | null, consumed: boolean): Decision {
  return {
    valid: true,
    decision: gateDecision(opts.mode, true, enforcement.action),
    failures,
    enforcement,
    receipt_hash: receiptHash,
    nonce_consumed: consumed,
    mode: opts.mode,
    checked_at: opts.now,
    issuer: r.issuer,
    kid,
  };
}
