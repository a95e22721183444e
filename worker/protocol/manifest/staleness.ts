/**
 * Manifest staleness (CCS §4.6): a receipt's config_hash names a configuration whose
 * manifest_hash names a manifest; when that manifest's profiles_digest is not the issuer's
 * current one, what the issuer declared has changed since the receipt was issued, and the relying
 * party must re-query the manifest and re-evaluate. A warning: the receipt's evidence is unchanged.
 */
import { failure, type Failure } from "../codes.js";

/** The profiles_digest a receipt's configuration bound, beside the issuer's current one. */
export interface ManifestBinding {
  bound: string;
  current: string;
}

export function manifestStaleness(binding: ManifestBinding | null): Failure | null {
  if (binding === null || binding.bound === binding.current) return null;
  return failure("MANIFEST_STALE", `the receipt's configuration bound profiles_digest ${binding.bound}; the issuer's manifest now declares ${binding.current}: re-query its manifest and re-evaluate`);
}
