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
};
