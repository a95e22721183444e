/**
 * Intake vectors (vectors/ccs/intake.json): CV-001, CV-002, CV-003, CV-004 and CV-007 as
 * executable cases, plus one with a fractional verdict time. Each receipt is issued by the pure
 * issuing function from fixed seeds, a fixed clock, nonces derived from labels and a counting
 * sequence, so the file regenerates byte for byte; the tests also run every intake through the
 * HTTP route and compare what is not random there (verdict, hashes, errors).
 */
import { canonicalConfig, configHash } from "../../worker/protocol/issuing/config.js";
import { parseIntake } from "../../worker/protocol/issuing/command.js";
import { legacyPayload } from "../../worker/protocol/issuing/legacy-hmac.js";
import { issueAdmission, type IssuingContext } from "../../worker/protocol/issuing/lifecycle.js";
import { webCryptoSigner } from "../../worker/protocol/issuing/signer.js";
import { fromHex } from "../../worker/protocol/encoding.js";
import { publicKeyFromSeed } from "../../worker/protocol/ed25519.js";
import { canonicalReceipt } from "../../worker/protocol/receipt.js";
import { identity, labelHex } from "./factory.js";

export const INTAKE_ISSUER = "https://countersign.vectors.example";
export const INTAKE_KID = "vectors-intake-1";
const AUDIENCE = "https://relying-party.example";

const command = (tool: string, params: Record<string, unknown>, label: string, timestamp = 1796000000) => ({
  intake_version: "1.3",
  agent_id: "test-agent",
  tool,
  params,
  timestamp,
  trace_id: label,
});

export async function generateIntake(now: number) {
  const id = await identity("intake/issuer", INTAKE_ISSUER, INTAKE_KID);
  const legacyKey = fromHex(await labelHex("intake/legacy-hmac-key", 64))!;
  const signer = webCryptoSigner({ kid: INTAKE_KID, seed: id.seed, publicKey: publicKeyFromSeed(id.seed), legacyHmacKey: legacyKey });
  const config = await canonicalConfig({ signingKeyId: INTAKE_KID });
  const ctx: IssuingContext = { issuer: INTAKE_ISSUER, config, configHash: await configHash(config), ttl: 60, maxClockSkew: 30, pinnedConfigHashes: null };
  let sequence = 0;
  const issue = async (body: unknown, label: string, at = now, c = ctx) => {
    const nonce = fromHex(await labelHex(`intake/${label}/nonce`, 32))!;
    return issueAdmission(parseIntake(body), AUDIENCE, c, { now: () => at, randomBytes: () => nonce, nextSequence: async () => ++sequence, signer });
  };

  const cv1 = command("search_web", { query: "weather in Tokyo" }, "c0000000000c0001");
  const cv2 = command("shell_exec", { command: "rm -rf /" }, "c0000000000c0002");
  const cv3 = command("search_web", { query: "weather in Tokyo" }, "c0000000000c0003");
  const cv4a = command("search_web", { query: "weather in Tokyo" }, "c0000000000c0004");
  const cv4b = command("search_web", { query: "weather in Osaka" }, "c0000000000c0004");
  const { timestamp: _, ...cv7 } = command("search_web", { query: "weather in Tokyo" }, "c0000000000c0007");
  const floatBody = command("search_web", { query: "weather in Tokyo" }, "c00000000000f10a", 1796000000.5);

  const narrow = await canonicalConfig({ signingKeyId: INTAKE_KID, rules: ["SEC-001", "SEC-002", "SEC-007"] });
  const narrowCtx = { ...ctx, config: narrow, configHash: await configHash(narrow) };
  const [a1, a2, a3a, a3b, a4a, a4b, af] = [
    await issue(cv1, "cv-001"),
    await issue(cv2, "cv-002"),
    await issue(cv3, "cv-003/all-rules"),
    await issue(cv3, "cv-003/three-rules", now, narrowCtx),
    await issue(cv4a, "cv-004/a"),
    await issue(cv4b, "cv-004/b"),
    await issue(floatBody, "float", 1796000000.5),
  ];
  const { receipt: _r, signature: _s, ...floatFields } = af.receipt;
  return {
    description: "countersign intake vectors (CCS §3, §10). Each receipt was issued by the pure issuing function at `now` with the listed identity (seed and legacy key derived in vectors/ccs/factory.ts from the labels in the generator), nonces from labels and sequences counting from 1. Through POST /v1/intake, compare verdict, block_reason emptiness, request_hash, params_hash, action and config_hash relations, and error answers exactly.",
    generator: "vectors/ccs/intake.ts",
    now,
    audience: AUDIENCE,
    issuer: { issuer: INTAKE_ISSUER, kid: INTAKE_KID, public_key: id.publicKey },
    config: { config, config_hash: ctx.configHash },
    vectors: [
      { id: "CV-001", title: "basic allow: search_web for the weather", intake: cv1, expect: { status: 200, verdict: "allow", block_reason_empty: true }, receipt: a1.receipt },
      { id: "CV-002", title: "basic deny: shell_exec rm -rf /", intake: cv2, expect: { status: 200, verdict: "deny", block_reason_empty: false }, receipt: a2.receipt },
      {
        id: "CV-003",
        title: "config hash binding: the same command under two rule sets gives two config_hash values",
        intake: cv3,
        rule_sets: [config.rules, narrow.rules],
        expect: { status: 200, config_hashes_differ: true },
        receipts: [a3a.receipt, a3b.receipt],
      },
      {
        id: "CV-004",
        title: "request hash binding: commands differing only in params give different request_hash values",
        intakes: [cv4a, cv4b],
        expect: { status: 200, request_hashes_differ: true },
        receipts: [a4a.receipt, a4b.receipt],
      },
      { id: "CV-007", title: "intake fail-closed: a missing field is INTAKE_MISSING_FIELD and no receipt", intake: cv7, expect: { status: 400, error: { code: "INTAKE_MISSING_FIELD", retry: "MAY", detail: "missing required field: timestamp", trace_id: "c0000000000c0007" } } },
      {
        id: "FLOAT-verdict-time",
        title: "a fractional verdict time: the exact signed bytes (RFC 8785) and legacy payload (Python str) of a receipt issued at 1796000000.5",
        intake: floatBody,
        at: 1796000000.5,
        receipt: af.receipt,
        signed_text: new TextDecoder().decode(canonicalReceipt(af.receipt).signedBytes),
        legacy_payload: legacyPayload(floatFields),
      },
    ],
  };
}
