/**
 * The two issuing steps, pure (clock, randomness, sequence source and keys are parameters):
 * `issueAdmission` judges a normalised Command and signs its admission receipt; `finaliseReceipt`
 * judges the tool's output and signs the final receipt. A deny is final at admission; an allow
 * admission receipt has response_hash "" until it is finalised. The journal persists what these
 * return; the intake route calls the first.
 */
import { jcs, prefixedDigest, sha256Hex } from "../digest.js";
import { toHex, utf8 } from "../encoding.js";
import { canonicalRequest } from "../checks/binding.js";
import { ACTION_PREFIX, canonicalReceipt, type Receipt, type UnsignedReceipt } from "../receipt.js";
import type { TrustedKey } from "../anchors.js";
import type { SignatureVerifier } from "../ed25519.js";
import type { CanonicalConfig } from "./config.js";
import { IntakeError, type Intake } from "./command.js";
import type { DelegationCheck, DelegationLink } from "./delegation.js";
import { legacyPayload } from "./legacy-hmac.js";
import { checkPolicyFloor, POLICY_FLOOR_VIOLATION } from "./policy-floor.js";
import { combine, INPUT_RULES, judge, OUTPUT_RULES, ruleSummary, type InputRule, type OutputRule, type RuleResult } from "./rules/index.js";
import type { ToolOutput } from "./rules/types.js";
import type { ReceiptSigner } from "./signer.js";
import { evidenceDeny, evidenceGaps, type EvidenceGap } from "./challenge.js";

/** What this deployment issues under: fixed per configuration. */
export interface IssuingContext {
  issuer: string;
  config: CanonicalConfig;
  configHash: string;
  /** Seconds from issued_at to expires_at (RECEIPT_TTL). */
  ttl: number;
  maxClockSkew: number;
  /** Config hashes this deployment is pinned to (SEC-008), or null. */
  pinnedConfigHashes: readonly string[] | null;
}

export interface IssuingDeps {
  /** Unix seconds; read once per receipt, for timestamp, verified_at and issued_at alike. */
  now(): number;
  randomBytes(n: number): Uint8Array;
  /** The next sequence number of the signing key: strictly increasing, never repeated. */
  nextSequence(): Promise<number>;
  signer: ReceiptSigner;
  /** Verifies a delegation_chain; needed only for Commands that carry one. */
  delegation?(value: Record<string, unknown>): Promise<DelegationCheck>;
  /** The rules to judge with; the registered rules enabled in the configuration by default. */
  inputRules?: readonly InputRule[];
}

export interface Admission {
  receipt: Receipt;
  /** The runtime context the receipt binds (the caller's plus what intake adds), or null when it binds none. */
  runtime_context: Record<string, unknown> | null;
  results: RuleResult[];
  /** Evidence the Command lacks: when any, the receipt is a deny and the answer carries a challenge (CCS §4.7). */
  gaps: EvidenceGap[];
  /** The Command as judged, to be judged again with the missing evidence. */
  intake: Intake;
  /** For a delegated Command: when its parent stops verifying, so no evidence can earn it an allow after. */
  parentValidUntil?: number;
  /** For a linked delegated Command: the keys its authority rests on (DelegationCheck's delegatedUnder), what a revocation of one of them marks it by. */
  delegatedUnder?: string[];
}

/** Timestamps are kept to the millisecond, so issued_at + ttl prints as expected. */
const millis = (t: number): number => Math.round(t * 1000) / 1000;

/** Fills field 7 (legacy HMAC over the §4.2 payload) and signs fields 1–21. */
export async function sealReceipt(u: Omit<UnsignedReceipt, "receipt">, signer: ReceiptSigner): Promise<Receipt> {
  const legacy = toHex(await signer.mac(utf8(legacyPayload(u)))).slice(0, 32);
  const unsigned: UnsignedReceipt = { ...u, receipt: legacy };
  const signature = toHex(await signer.sign(canonicalReceipt(unsigned).signedBytes));
  return { ...unsigned, signature };
}

const enabled = <R extends { name: string }>(rules: readonly R[], config: CanonicalConfig) => rules.filter((r) => config.rules.includes(r.name));

export async function issueAdmission(intake: Intake, audience: string, ctx: IssuingContext, deps: IssuingDeps): Promise<Admission> {
  const { command } = intake;
  const request = { agent_id: command.agent_id, tool: command.tool, params: command.params, timestamp: command.timestamp, trace_id: command.trace_id };
  // The params' canonical text is built once and digested both alone and inside the request.
  const paramsText = jcs(command.params);
  const [paramsDigest, requestHash] = await Promise.all([sha256Hex(paramsText), prefixedDigest(canonicalRequest(request, paramsText))]);
  const rules = deps.inputRules ?? enabled(INPUT_RULES, ctx.config);
  const results = await judge(rules, { command: command as unknown as Record<string, unknown>, requestHash, humanApproval: intake.humanApproval, configHash: ctx.configHash, pinnedConfigHashes: ctx.pinnedConfigHashes });
  const floor = checkPolicyFloor(intake.serverProfile, ctx.config.policy_floor);
  results.push(floor);

  let link: DelegationLink | null = null;
  let parentValidUntil: number | undefined;
  let delegatedUnder: string[] | undefined;
  if (command.delegation_chain) {
    if (!deps.delegation) throw new Error("a delegated Command needs a delegation verifier");
    const check = await deps.delegation(command.delegation_chain);
    if (check.kind === "malformed") throw new IntakeError("INTAKE_MALFORMED", check.detail, command.trace_id);
    if (check.kind === "level0") throw new IntakeError("LEVEL0_NOT_ACCEPTED", check.detail, command.trace_id);
    if (check.kind === "linked") ({ link, validUntil: parentValidUntil, delegatedUnder } = check);
    results.push({ name: "delegation", verdict: check.kind === "linked" ? "allow" : "deny", reason: check.kind === "linked" ? `hop ${check.link.hop_count}` : `delegation_invalid: ${check.codes.join(", ")}` });
  }
  const gaps = evidenceGaps(intake, results, requestHash, ctx.config);
  if (gaps.length > 0) results.push(evidenceDeny(gaps));
  const combined = combine(results);
  const blockReason = floor.verdict === "deny" ? POLICY_FLOOR_VIOLATION : combined.block_reason;

  const added = {
    ...(intake.serverProfile ? { server_profile: intake.serverProfile } : {}),
    ...(intake.humanApproval ? { human_approval: intake.humanApproval } : {}),
    ...(link ? { delegation: link } : {}),
  };
  const context = command.runtime_context || Object.keys(added).length > 0 ? { ...command.runtime_context, ...added } : null;

  const contextHash = context ? await prefixedDigest(jcs(context)) : "";
  const sequence = await deps.nextSequence();
  const nonce = toHex(deps.randomBytes(16));
  const issuedAt = millis(deps.now());
  const receipt = await sealReceipt(
    {
      action: `${ACTION_PREFIX}${command.tool}:${paramsDigest}`,
      audience,
      block_reason: combined.verdict === "allow" ? "" : blockReason,
      config_hash: ctx.configHash,
      expires_at: millis(issuedAt + ctx.ttl),
      issued_at: issuedAt,
      issuer: ctx.issuer,
      max_clock_skew: ctx.maxClockSkew,
      nonce,
      params_hash: paramsDigest.slice(0, 16),
      request_hash: requestHash,
      response_hash: "",
      rule_summary: ruleSummary(results),
      runtime_context_hash: contextHash,
      sequence,
      // One clock: the verdict time is the issue time is the verification time.
      timestamp: issuedAt,
      tool: command.tool,
      trace_id: command.trace_id,
      verdict: combined.verdict,
      verified_at: issuedAt,
    },
    deps.signer,
  );
  return { receipt, runtime_context: context, results, gaps, intake, ...(parentValidUntil === undefined ? {} : { parentValidUntil }), ...(delegatedUnder === undefined ? {} : { delegatedUnder }) };
}

export interface FinalisingDeps extends Omit<IssuingDeps, "delegation" | "inputRules"> {
  /** Pinned keys of an issuer, for receipts carried in the output (OUT-008). */
  issuerKeys(issuer: string): Promise<TrustedKey[] | null>;
  verifier: SignatureVerifier;
  outputRules?: readonly OutputRule[];
  /** The output rules' results, already judged on this very output (a draft's): not judged again. */
  judged?: RuleResult[];
}

export interface Finalised {
  receipt: Receipt;
  results: RuleResult[];
}

/**
 * The final receipt of an allow admission: the output rules judged, response_hash computed
 * (SHA-256 of the output's canonical JSON), a fresh nonce, sequence and verdict time; every
 * binding of the admission (request, action, runtime context, audience, config) carried over.
 * Throws when the admission is not an allow awaiting its response, or was issued under another
 * configuration.
 */
export async function finaliseReceipt(admission: Receipt, output: ToolOutput, ctx: IssuingContext, deps: FinalisingDeps): Promise<Finalised> {
  if (admission.verdict !== "allow" || admission.response_hash !== "") throw new TypeError("only an allow admission receipt without a response can be finalised");
  if (admission.config_hash !== ctx.configHash) throw new TypeError("the admission was issued under another configuration");
  const admissionReceiptHash = await prefixedDigest(canonicalReceipt(admission).fullText);
  const rules = deps.outputRules ?? enabled(OUTPUT_RULES, ctx.config);
  const results = deps.judged ?? (await judge(rules, { tool: admission.tool, output, admissionReceiptHash, issuerKeys: deps.issuerKeys, verifier: deps.verifier }));
  const combined = combine(results);
  const responseHash = await prefixedDigest(jcs(output.content));
  const sequence = await deps.nextSequence();
  const nonce = toHex(deps.randomBytes(16));
  const issuedAt = millis(deps.now());
  const { signature: _s, receipt: _r, ...kept } = admission;
  const receipt = await sealReceipt(
    {
      ...kept,
      verdict: combined.verdict,
      block_reason: combined.block_reason,
      rule_summary: results.length > 0 ? `${admission.rule_summary}|${ruleSummary(results)}` : admission.rule_summary,
      response_hash: responseHash,
      nonce,
      sequence,
      timestamp: issuedAt,
      verified_at: issuedAt,
      issued_at: issuedAt,
      expires_at: millis(issuedAt + ctx.ttl),
    },
    deps.signer,
  );
  return { receipt, results };
}
