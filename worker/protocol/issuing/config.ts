/**
 * The canonical configuration (CCS §5, Figure 5) and its hash. It commits to the rule set by
 * name, to the rules' substance through `policy_version` (derived from a digest of every scope
 * set, pattern and threshold), to the signing key, and to the policy floor.
 */
import { jcs, prefixedDigest, sha256Hex } from "../digest.js";
import { RULE_NAMES } from "./rules/index.js";
import { SCOPE_DATA } from "./scopes.js";
import { DEFAULT_POLICY_FLOOR, type SecurityProfile } from "./policy-floor.js";

/**
 * Names the code of the rules and of the intake reading they judge (their scope data is
 * `policy_version`). It is part of the canonical configuration, so a new version moves
 * `config_hash`: bumped whenever a rule could judge some Command or output differently
 * (test/unit/rules-version.test.ts fails until it is).
 */
export const VERIFIER_VERSION = "countersign/0.2.58";
export const SCHEMA_VERSION = "1.3";

export interface CanonicalConfig {
  rules: string[];
  policy_version: string;
  signing_key_id: string;
  verifier_version: string;
  schema_version: "1.3";
  deployment_mode: "out-of-process";
  /** `sha256:` + SHA-256 of the capability manifest's content (worker/protocol/manifest/manifest.ts). */
  manifest_hash?: string;
  policy_floor: SecurityProfile;
  /** Present (true) when a Command must declare its server's profile: an undeclared one is missing evidence (CCS §4.7). */
  server_profile_required?: true;
}

export interface ConfigInput {
  signingKeyId: string;
  /** Enabled rule names, a subset of the registered ones; all of them by default. Kept in registered order. */
  rules?: readonly string[];
  policyFloor?: SecurityProfile;
  /** An undeclared server profile is missing evidence, challenged rather than allowed. */
  serverProfileRequired?: boolean;
  /** The manifest_hash of the capability manifest published beside this configuration. */
  manifestHash?: string;
}

/** `countersign-policy/1+` and the first 16 hex of the digest of the scope data. */
export async function policyVersion(): Promise<string> {
  return `countersign-policy/1+${(await sha256Hex(jcs(SCOPE_DATA))).slice(0, 16)}`;
}

export async function canonicalConfig(i: ConfigInput): Promise<CanonicalConfig> {
  const enabled = i.rules ?? RULE_NAMES;
  const unknown = enabled.filter((r) => !RULE_NAMES.includes(r));
  if (unknown.length > 0) throw new TypeError(`unknown rules: ${unknown.join(", ")}`);
  return {
    rules: RULE_NAMES.filter((r) => enabled.includes(r)),
    policy_version: await policyVersion(),
    signing_key_id: i.signingKeyId,
    verifier_version: VERIFIER_VERSION,
    schema_version: SCHEMA_VERSION,
    deployment_mode: "out-of-process",
    policy_floor: i.policyFloor ?? DEFAULT_POLICY_FLOOR,
    ...(i.manifestHash ? { manifest_hash: i.manifestHash } : {}),
    ...(i.serverProfileRequired ? { server_profile_required: true as const } : {}),
  };
}

/** `sha256:` + SHA-256 of the configuration's RFC 8785 form. */
export const configHash = (config: CanonicalConfig): Promise<string> => prefixedDigest(jcs(config));
