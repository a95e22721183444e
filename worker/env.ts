/**
 * The Worker's environment: the bindings, variables and secret names that `wrangler types`
 * generates from wrangler.toml and .dev.vars.example (worker-configuration.d.ts, written by `npm
 * run types`; `npm test` fails when it is not current), plus the optional variables that
 * wrangler.toml leaves unset. README's Configuration section says what each one means.
 */
export type Env = Cloudflare.Env & {
  /** JSON array of `{kid, public_key}`: retired keys still published at /.well-known/ccs-issuer. */
  PUBLISHED_KEYS?: string;
  /** Comma-separated subset of the sixteen rules to enable (default: all). */
  RULES?: string;
  /** Comma-separated config hashes this deployment may issue under (SEC-008). */
  PINNED_CONFIG_HASHES?: string;
  /** "true": a Command without server_profile lacks evidence the policy floor needs (deny + challenge); default false. */
  POLICY_FLOOR_REQUIRES_PROFILE?: string;
  /** Comma-separated subset of countersign's profiles its capability manifest declares (default: all). */
  PROFILES?: string;
  /** Seconds a signed capability manifest is valid from its published_at (default 604800, at least 2 days). */
  MANIFEST_TTL?: string;
  /** Challenge policy (CCS §4.7): deadline = min(CHALLENGE_BASE_DURATION × CHALLENGE_DEADLINE_MULTIPLIER, CHALLENGE_MAX_DEADLINE) seconds (defaults 60, 5, 600). */
  CHALLENGE_BASE_DURATION?: string;
  CHALLENGE_DEADLINE_MULTIPLIER?: string;
  CHALLENGE_MAX_DEADLINE?: string;
  /** CCS 13.7: allow-only verdicts that flag an issuer for review (default 10000, the draft's count). */
  REVIEW_ALLOW_ONLY_THRESHOLD?: string;
};
