/**
 * Generates vectors/ccs/receipts.json: CCS v1.3 conformance vectors from fixed seeds, judged at
 * a fixed instant. `npm run vectors:generate` rewrites the file; the output is committed and the
 * tests check that a fresh generation is byte-identical.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { anchorFor, identity, labelHex, makeReceipt, type Identity, type ReceiptSpec } from "./factory.js";
import { generatePropagation } from "./propagation.js";
import { generateIntake } from "./intake.js";
import { jcs, prefixedDigest, sha256Hex } from "../../worker/protocol/digest.js";
import { signWithSeed } from "../../worker/protocol/ed25519.js";
import { fromBase64Url, fromHex } from "../../worker/protocol/encoding.js";

import { legacyMac, level0Payload } from "../../worker/protocol/conformance/level0.js";
import { fingerprintOf } from "../../worker/protocol/issuing/identity.js";
import { buildManifestContent, manifestHash, signManifest } from "../../worker/protocol/manifest/manifest.js";

/** 2100-01-01T00:00:00Z: the vectors' clock, far enough ahead that no purge alarm fires during a test run. */
export const VECTOR_NOW = 4102444800;
export const AUDIENCE = "https://relying-party.example";
const OTHER_AUDIENCE = "https://other-party.example";

interface Expect {
  status: number;
  valid: boolean;
  decision: "accept" | "reject" | "defer" | "audit";
  codes: string[];
  action?: string;
  nonce_consumed: boolean;
}
interface Call {
  body?: Record<string, unknown>;
  raw_body?: string;
  expect: Expect;
}
interface Vector {
  id: string;
  title: string;
  /** Keys to revoke first; `relying_party`: the calls are made by a party registered with this verifier-class floor. */
  setup?: { revoke: { issuer: string; kid: string }[]; relying_party?: { name: string; token: string; min_verifier_class: "A" | "B" | "C" } };
  calls: Call[];
}

/**
 * The Level 0 shared secret of the vectors, named LEGACY_HMAC_KEY as countersign's own field-7 key
 * is: a runner's deployment must hold it under that name (the workers-pool bindings do).
 */
export const LEVEL0_SECRET_NAME = "LEGACY_HMAC_KEY";
export const LEVEL0_SECRET = "01".repeat(32);

const reject = (codes: string[], status = 200): Expect => ({ status, valid: false, decision: "reject", codes, action: "block", nonce_consumed: false });
/** What a gate does with valid evidence in enforce mode, by its CCS Figure 9 action. */
const GATE: Record<string, Expect["decision"]> = { proceed: "accept", proceed_pending_reconciliation: "accept", block: "reject", defer: "defer", conservative: "defer" };
const valid = (action: string, codes: string[] = []): Expect => ({ status: 200, valid: true, decision: GATE[action], codes, action, nonce_consumed: true });

export async function generate() {
  const a1 = await identity("issuer-a/a1", "https://issuer-a.example", "a1");
  const aOld = await identity("issuer-a/a0", "https://issuer-a.example", "a0-retired");
  const r1 = await identity("issuer-revoked/r1", "https://issuer-revoked.example", "r1");
  const s1 = await identity("issuer-seq/s1", "https://issuer-seq.example", "s1");
  const attacker = await identity("attacker", "https://attacker.example", "x1");
  const unknown = await identity("issuer-unknown/u1", "https://issuer-unknown.example", "u1");
  const pinnedConfig = await identity("issuer-config/c1", "https://issuer-config.example", "c1");
  const declaring = await identity("issuer-manifest/m1", "https://issuer-manifest.example", "m1");
  const level0Issuer = await identity("issuer-level0/l0", "https://issuer-level0.example", "l0");
  const classB = await identity("issuer-class-b/b1", "https://issuer-class-b.example", "b1");

  let sequence = 1000;
  const spec = (label: string, extra: Partial<ReceiptSpec> = {}): ReceiptSpec => ({
    label, audience: AUDIENCE, issuedAt: VECTOR_NOW - 10, sequence: (sequence += 10), ...extra,
  });
  const call = async (id: Identity, s: ReceiptSpec, extra: Record<string, unknown> = {}) => {
    const { receipt, request } = await makeReceipt(id, s);
    return { receipt, audience: AUDIENCE, request, ...extra } as Record<string, unknown>;
  };
  const withReceipt = (body: Record<string, unknown>, patch: Record<string, unknown>) => ({
    ...body, receipt: { ...(body.receipt as object), ...patch },
  });
  const vectors: Vector[] = [];
  const add = (id: string, title: string, calls: Call[], setup?: Vector["setup"]) => vectors.push({ id, title, calls, ...(setup ? { setup } : {}) });

  // Positive vectors.
  add("CV-001", "admission receipt (allow, no response yet) accepted in enforce mode", [
    { body: await call(a1, spec("cv-001")), expect: valid("proceed_pending_reconciliation") },
  ]);
  add("CV-002", "deny receipt is valid evidence whose decision is reject and action block", [
    { body: await call(a1, spec("cv-002", { verdict: "deny" })), expect: valid("block") },
  ]);
  add("POS-escalate", "escalate receipt is valid evidence whose decision is defer", [
    { body: await call(a1, spec("cv-003", { verdict: "escalate" })), expect: valid("defer") },
  ]);
  const response = { status: "ok", transfer_id: "tr-5521" };
  const runtimeContext = { region: "eu-west", sandbox: "gvisor", model: "planner-v2" };
  const cv4 = spec("cv-004", { response, runtimeContext });
  add("POS-finalised", "finalised allow receipt bound to the presented request, response and runtime context", [
    { body: await call(a1, cv4, { response, runtime_context: runtimeContext }), expect: valid("proceed") },
  ]);
  const cv5 = await call(a1, spec("cv-005"));
  add("POS-audit-then-enforce", "audit mode at a chosen instant consumes nothing and decides nothing; the receipt is then accepted in enforce mode", [
    { body: { ...cv5, mode: "audit", at: VECTOR_NOW - 5 }, expect: { status: 200, valid: true, decision: "audit", codes: [], action: "proceed_pending_reconciliation", nonce_consumed: false } },
    { body: cv5, expect: valid("proceed_pending_reconciliation") },
  ]);
  add("CV-005", "issuer/audience binding: a receipt issued for another consumer is refused here", [
    { body: await call(a1, spec("13.5", { audience: OTHER_AUDIENCE })), expect: reject(["AUDIENCE_MISMATCH"]) },
  ]);
  add("CV-006", "freshness: expires_at = T with max_clock_skew 0, judged at T+1", [
    { body: await call(a1, spec("cv-006", { issuedAt: VECTOR_NOW - 61, lifetime: 60, skew: 0 })), expect: reject(["FRESHNESS_EXPIRED"]) },
  ]);
  add("NEG-signed-field-changed", "a signed field changed after signing breaks the signature", [
    { body: withReceipt(await call(a1, spec("cv-006")), { verified_at: VECTOR_NOW - 9 }), expect: reject(["SIGNATURE_INVALID"]) },
  ]);
  const should = ["sequence", "max_clock_skew", "response_hash", "runtime_context_hash"] as const;
  const minimal = await call(a1, spec("should-absent", { omit: [...should] }));
  add("SHOULD-absent", "a receipt without the four SHOULD fields, signed over the 18 present, is accepted with the draft's defaults", [
    { body: minimal, expect: valid("proceed_pending_reconciliation") },
    { body: minimal, expect: reject(["REPLAY_DETECTED"]) },
  ]);
  const full = await call(a1, spec("should-stripped"));
  add("SHOULD-stripped", "a SHOULD field removed from a receipt signed with it breaks the signature", [
    { body: { ...full, receipt: Object.fromEntries(Object.entries(full.receipt as object).filter(([k]) => k !== "sequence")) }, expect: reject(["SIGNATURE_INVALID"]) },
    { body: { ...full, receipt: Object.fromEntries(Object.entries(full.receipt as object).filter(([k]) => k !== "response_hash")) }, expect: reject(["SIGNATURE_INVALID"]) },
    { body: full, expect: valid("proceed_pending_reconciliation") },
  ]);

  // CCS §13 negative cases.
  const n131 = await call(a1, spec("13.1"));
  add("13.1", "parameter substitution: the presented params are not the signed ones", [
    { body: { ...n131, request: { ...(n131.request as object), params: { amount: 125000, currency: "EUR", to: "acct-6666" } } }, expect: reject(["BINDING_MISMATCH", "BINDING_MISMATCH", "BINDING_MISMATCH"]) },
  ]);
  const n132 = await call(a1, spec("13.2", { response }), { response });
  add("13.2", "response substitution: the presented response is not the signed one", [
    { body: { ...n132, response: { status: "ok", transfer_id: "tr-9999" } }, expect: reject(["BINDING_MISMATCH"]) },
  ]);
  const n133 = await call(a1, spec("13.3"));
  add("13.3", "replay: the same receipt presented twice", [
    { body: n133, expect: valid("proceed_pending_reconciliation") },
    { body: n133, expect: reject(["REPLAY_DETECTED"]) },
  ]);
  add("13.4", "expired receipt", [
    { body: await call(a1, spec("13.4", { issuedAt: VECTOR_NOW - 1000 })), expect: reject(["FRESHNESS_EXPIRED"]) },
  ]);
  add("13.6", "attacker signs with its own key and claims a pinned issuer", [
    { body: await call(attacker, spec("13.6", { claimIssuer: a1.issuer })), expect: reject(["SIGNATURE_INVALID"]) },
  ]);

  // One vector per remaining failure code and form.
  add("NEG-untrusted-issuer", "issuer not pinned", [
    { body: await call(unknown, spec("neg-untrusted")), expect: reject(["UNTRUSTED_ISSUER"]) },
  ]);
  add("NEG-key-outside-validity", "signed by a pinned key whose validity ended before issued_at", [
    { body: await call(aOld, spec("neg-key-validity")), expect: reject(["UNTRUSTED_ISSUER"]) },
  ]);
  add("NEG-anchor-revoked", "signed by a revoked key", [
    { body: await call(r1, spec("neg-revoked")), expect: reject(["ANCHOR_REVOKED"]) },
  ], { revoke: [{ issuer: r1.issuer, kid: r1.kid }] });
  add("NEG-sequence-repeated", "a new nonce with a sequence already presented", [
    { body: await call(s1, spec("neg-seq-a", { sequence: 5000 })), expect: valid("proceed_pending_reconciliation") },
    { body: await call(s1, spec("neg-seq-b", { sequence: 5000 })), expect: reject(["REPLAY_DETECTED"]) },
  ]);
  add("NEG-sequence-too-old", "a sequence 1024 or more below the highest seen, for an issuer pinned with sequence_policy \"window\"", [
    { body: await call(s1, spec("neg-seq-c", { sequence: 3976 })), expect: reject(["REPLAY_DETECTED"]) },
    { body: await call(s1, spec("neg-seq-d", { sequence: 3977 })), expect: valid("proceed_pending_reconciliation") },
  ]);
  const ctxBody = await call(a1, spec("neg-runtime", { runtimeContext }), { runtime_context: runtimeContext });
  add("NEG-runtime-context", "runtime context differs from the signed one", [
    { body: { ...ctxBody, runtime_context: { ...runtimeContext, sandbox: "none" } }, expect: reject(["BINDING_MISMATCH"]) },
  ]);
  add("NEG-outcome-indeterminate", "a caller reports the outcome indeterminate: valid, handled conservatively, with a warning", [
    { body: await call(a1, spec("neg-indeterminate"), { outcome_status: "indeterminate" }), expect: valid("conservative", ["OUTCOME_INDETERMINATE"]) },
  ]);
  add("NEG-issued-in-future", "issued beyond the skew in the future", [
    { body: await call(a1, spec("neg-future", { issuedAt: VECTOR_NOW + 60 })), expect: reject(["FRESHNESS_EXPIRED"]) },
  ]);
  add("NEG-lifetime-too-long", "lifetime beyond the 300 s policy maximum", [
    { body: await call(a1, spec("neg-lifetime", { lifetime: 600 })), expect: reject(["FRESHNESS_EXPIRED"]) },
  ]);
  add("NEG-every-failure-reported", "expired and for another audience: both failures reported, expiry first", [
    { body: await call(a1, spec("neg-multi", { issuedAt: VECTOR_NOW - 1000, audience: OTHER_AUDIENCE })), expect: reject(["FRESHNESS_EXPIRED", "AUDIENCE_MISMATCH"]) },
  ]);

  // Malformed receipts: schema (step 0) and strict parsing.
  const base = await call(a1, spec("malformed"));
  const raw = JSON.stringify(base);
  const r = base.receipt as Record<string, unknown>;
  const malformed = (id: string, title: string, c: Omit<Call, "expect">) => add(id, title, [{ ...c, expect: reject(["MALFORMED_RECEIPT"], 400) }]);
  malformed("MAL-23rd-field", "an unknown 23rd field (outcome_status) added to a signed receipt", { body: withReceipt(base, { outcome_status: "confirmed" }) });
  malformed("MAL-missing-field", "a receipt without its nonce", { body: { ...base, receipt: Object.fromEntries(Object.entries(r).filter(([k]) => k !== "nonce")) } });
  malformed("MAL-params-hash", "a 16-hex params_hash that is not the prefix of the full params digest", { body: withReceipt(base, { params_hash: "0123456789abcdef" }) });
  malformed("MAL-nan-as-text", "NaN smuggled as a string where a number belongs", { body: withReceipt(base, { expires_at: "NaN" }) });
  malformed("MAL-uppercase-signature", "signature in uppercase hex", { body: withReceipt(base, { signature: (r.signature as string).toUpperCase() }) });
  malformed("MAL-duplicate-key", "a duplicate key inside the receipt", { raw_body: raw.replace(`"nonce":"`, `"nonce":"${"0".repeat(32)}","nonce":"`) });
  malformed("MAL-lone-surrogate", "a lone surrogate escape inside the receipt", { raw_body: raw.replace(`"block_reason":""`, `"block_reason":"\\ud800"`) });
  malformed("MAL-unsafe-integer", "an integer beyond 2^53-1 inside the receipt", { raw_body: raw.replace(/"sequence":\d+/, `"sequence":9007199254740993`) });
  malformed("MAL-nan-token", "a bare NaN token inside the receipt", { raw_body: raw.replace(/"expires_at":\d+/, `"expires_at":NaN`) });

  add("NEG-config-not-pinned", "SEC-008: the issuer is pinned with config_hashes and the receipt's config_hash is not among them", [
    { body: await call(pinnedConfig, spec("neg-config")), expect: reject(["CONFIG_NOT_PINNED"]) },
  ]);

  // A configuration bound to the issuer's first manifest; the manifest pinned now declares fewer profiles.
  const contentOf = (profiles: { id: string; comparison_scope: string }[]) =>
    buildManifestContent({ verifierId: declaring.issuer, fingerprint: fingerprintOf(fromBase64Url(declaring.publicKey)!), profiles, challengePolicy: { base_duration: 60, deadline_multiplier: 5, max_deadline: 600 } });
  const first = await contentOf([{ id: "ccs/1.3/receipt-verification", comparison_scope: "receipt" }, { id: "ccs/1.3/intake", comparison_scope: "command" }]);
  const now = await contentOf([{ id: "ccs/1.3/receipt-verification", comparison_scope: "receipt" }]);
  const boundConfig = { rules: ["SEC-001"], policy_version: "vectors", manifest_hash: await manifestHash(first) };
  const current = await signManifest(now, { published_at: VECTOR_NOW - 86400, expires_at: VECTOR_NOW + 29 * 86400 }, async (m) => signWithSeed(m, declaring.seed));
  add("WARN-manifest-stale", "the receipt's config_hash binds a manifest whose profiles_digest differs from the issuer's pinned manifest: valid, with the warning", [
    { body: await call(declaring, spec("warn-manifest-stale", { configHash: await prefixedDigest(jcs(boundConfig)) })), expect: valid("proceed_pending_reconciliation", ["MANIFEST_STALE"]) },
  ]);

  // CCS §10 Level 0 and Level 1, the draft's CV-001 and CV-002 as written.
  const secret = fromHex(LEVEL0_SECRET)!;
  const level0Receipt = async (label: string, verdict: "allow" | "deny", tool: string, params: unknown, blockReason?: string) => {
    const request = { agent_id: "test-agent", tool, params, timestamp: VECTOR_NOW - 2, trace_id: await labelHex(`${label}/trace`, 16) };
    const fields = { trace_id: request.trace_id, verdict, timestamp: VECTOR_NOW - 1.5, tool, params_hash: (await sha256Hex(jcs(params))).slice(0, 16), rule_summary: verdict === "allow" ? "SEC-001=allow|SEC-004=allow" : "SEC-004=deny" };
    const receipt = { ...fields, receipt: legacyMac(level0Payload(fields), secret), ...(blockReason === undefined ? {} : { block_reason: blockReason }) };
    return { receipt, audience: AUDIENCE, request } as Record<string, unknown>;
  };
  const asLevel0 = (body: Record<string, unknown>, issuer = level0Issuer.issuer) => ({ ...body, level: 0, issuer });
  const l0 = (codes: string[], action: string, valid = true): Expect => ({ status: 200, valid, decision: valid ? GATE[action] : "reject", codes, action, nonce_consumed: false });
  const cv1 = { tool: "search_web", params: { query: "weather in Tokyo" } };
  const cv2 = { tool: "shell_exec", params: { command: "rm -rf /" } };
  const cv1l0 = await level0Receipt("cv-001-l0", "allow", cv1.tool, cv1.params);
  add("CV-001-L0", "Level 0: the 7-field allow receipt verified by its HMAC under the issuer's pinned shared secret; no nonce, so presented twice it passes twice, and says so", [
    { body: asLevel0(cv1l0), expect: l0(["REPLAY_UNGUARDED"], "proceed_pending_reconciliation") },
    { body: asLevel0(cv1l0), expect: l0(["REPLAY_UNGUARDED"], "proceed_pending_reconciliation") },
    { body: cv1l0, expect: reject(["LEVEL0_NOT_ACCEPTED"]) },
    { body: asLevel0(cv1l0, a1.issuer), expect: l0(["UNTRUSTED_ISSUER", "REPLAY_UNGUARDED"], "block", false) },
  ]);
  const cv2l0 = await level0Receipt("cv-002-l0", "deny", cv2.tool, cv2.params, "SEC-004: destructive shell command");
  add("CV-002-L0", "Level 0: the 7-field deny receipt, block_reason non-empty, its HMAC covering the deny verdict; turned into an allow it no longer verifies", [
    { body: asLevel0(cv2l0), expect: l0(["REPLAY_UNGUARDED"], "block") },
    { body: asLevel0(withReceipt(cv2l0, { verdict: "allow", block_reason: "" })), expect: l0(["SIGNATURE_INVALID", "REPLAY_UNGUARDED"], "block", false) },
  ]);
  const cv1l1 = await call(level0Issuer, spec("cv-001-l1", { ...cv1, legacySecret: secret }));
  add("CV-001-L1", "Level 1: the same command as a 22-field Ed25519 receipt whose field 7 is the HMAC over the extended payload; with level: 0 its field 7 is checked and then the receipt is judged in full as at level 1, so its nonce is consumed and it is not presented again at either level", [
    { body: asLevel0(cv1l1), expect: valid("proceed_pending_reconciliation") },
    { body: cv1l1, expect: reject(["REPLAY_DETECTED"]) },
    { body: asLevel0(cv1l1), expect: reject(["REPLAY_DETECTED"]) },
  ]);
  const cv2l1 = await call(level0Issuer, spec("cv-002-l1", { ...cv2, verdict: "deny", legacySecret: secret }));
  add("CV-002-L1", "Level 1: the deny as a 22-field receipt; field 7 and the signature both cover the deny: with block_reason edited field 7 fails first and consumes nothing, the honest receipt then blocks and consumes its nonce", [
    { body: asLevel0(withReceipt(cv2l1, { block_reason: "edited" })), expect: l0(["SIGNATURE_INVALID"], "block", false) },
    { body: asLevel0(cv2l1), expect: valid("block") },
    { body: cv2l1, expect: reject(["REPLAY_DETECTED"]) },
  ]);

  // CCS §9: a relying party requiring Class B refuses a Class C issuer's receipt before its nonce is consumed.
  add("CLASS-floor", "a relying party registered with min_verifier_class B: a Class C receipt is refused, a Class B one accepted", [
    { body: await call(a1, spec("class-floor-c")), expect: reject(["VERIFIER_CLASS_INSUFFICIENT"]) },
    { body: await call(classB, spec("class-floor-b")), expect: valid("proceed_pending_reconciliation") },
  ], { revoke: [], relying_party: { name: "vectors-class-b", token: "vectors-class-b-token-0123456789abcdef", min_verifier_class: "B" } });

  return {
    description: "countersign CCS v1.3 conformance vectors. Pin `anchors` on a deployment holding `secrets` (Worker secrets the Level 0 anchor names), then `manifests` (PUT /v1/admin/manifests), apply each vector's setup (revocations; a relying party registered with a verifier-class floor, whose token makes that vector's calls), judge every call at `now` with POST /v1/receipts/verify, and compare status, valid, the ordered failure codes, enforcement.action and nonce_consumed. Vectors run in order against one deployment: replay state carries over.",
    generator: "vectors/ccs/generate.ts",
    now: VECTOR_NOW,
    audience: AUDIENCE,
    secrets: { [LEVEL0_SECRET_NAME]: LEVEL0_SECRET },
    anchors: [
      anchorFor(a1, { ...aOld }), anchorFor(r1), { ...anchorFor(s1), sequence_policy: "window" }, { ...anchorFor(pinnedConfig), config_hashes: ["sha256:" + (await labelHex("another-config", 64))] }, anchorFor(declaring),
      { ...anchorFor(level0Issuer), shared_secret: { secret: LEVEL0_SECRET_NAME } },
      { ...anchorFor(classB), verifier_class: "B", audit: { report: "https://audits.example/issuer-class-b/2026-03", date: "2026-03-31" } },
    ].map((anchor) => ({
      ...anchor,
      keys: anchor.keys.map((k) => (k.kid === aOld.kid ? { ...k, not_after: VECTOR_NOW - 86400 } : k)),
    })),
    manifests: [{ manifest: current, configurations: [{ config: boundConfig, manifest: first }] }],
    vectors,
  };
}

export const VECTORS_PATH = fileURLToPath(new URL("./receipts.json", import.meta.url));
export const PROPAGATION_PATH = fileURLToPath(new URL("./propagation.json", import.meta.url));
export const INTAKE_PATH = fileURLToPath(new URL("./intake.json", import.meta.url));
export const render = (doc: unknown): string => JSON.stringify(doc, null, 2) + "\n";

export async function generateAll(): Promise<{ path: string; text: string }[]> {
  const receipts = await generate();
  const propagation = {
    description: "countersign CCS §11 vectors. Pin `anchors`; judge `envelopes` with POST /v1/envelopes/verify at `now` on a deployment whose ORG_ID is `org_id`, in order (replay state carries over); judge `chains` with POST /v1/chains/verify and compare chain_valid, broken_at_hop, the \"hop:code\" failures in order and, where given, the summary hash.",
    generator: "vectors/ccs/generate.ts",
    now: VECTOR_NOW,
    audience: AUDIENCE,
    ...(await generatePropagation(VECTOR_NOW, AUDIENCE)),
  };
  return [
    { path: VECTORS_PATH, text: render(receipts) },
    { path: PROPAGATION_PATH, text: render(propagation) },
    { path: INTAKE_PATH, text: render(await generateIntake(VECTOR_NOW)) },
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const { path, text } of await generateAll()) {
    writeFileSync(path, text);
    console.log(`wrote ${path}`);
  }
}
