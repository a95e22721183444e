/**
 * Profile routing (CCS §4.5.1): which verifier of this deployment's set evaluates a profile.
 * The set is this verifier followed by the pinned verifiers with a manifest, in id order; a
 * relying party's `exclude` lists verifiers it has already asked. Results are per comparison,
 * never a verdict:
 *
 * - HELD: the first verifier not excluded whose current manifest declares the profile (this one first);
 *   a pinned manifest is current inside its window while its signing key is still valid (not_after);
 * - UNDECIDED / PROFILE_NOT_HELD: no current manifest of a verifier not excluded declares it, but a
 *   pinned manifest that is no longer current does: re-fetch those (`consult`) before going on;
 * - UNDECIDED / NO_COMPARISON_RELATION: no manifest in the set declares it at all: halt;
 * - SET_EXHAUSTED (terminal): only excluded verifiers declare it; `queried_verifiers` is the
 *   caller's exclusions followed by every verifier asked here, for a relying party with a larger
 *   set to continue from without asking anyone twice.
 */
import { declares, keyValidNow, manifestCurrent, type ManifestContent, type UnsignedManifest } from "./manifest.js";

export interface Candidate {
  verifier_id: string;
  manifest: (UnsignedManifest & ManifestContent) | null;
  /**
   * A pinned manifest's signing key's not_after (`manifestKeyValidUntil`): past it, the manifest
   * is no longer current, whatever its window says. Absent or null: no end.
   */
  key_valid_until?: number | null;
}

export type Resolution =
  | { result: "HELD"; profile: string; verifier_id: string; here: boolean; queried_verifiers: string[] }
  | { result: "UNDECIDED"; profile: string; reason: "PROFILE_NOT_HELD"; consult: string[]; queried_verifiers: string[] }
  | { result: "UNDECIDED"; profile: string; reason: "NO_COMPARISON_RELATION"; queried_verifiers: string[] }
  | { result: "SET_EXHAUSTED"; profile: string; queried_verifiers: string[] };

export interface ResolveInput {
  profile: string;
  exclude: readonly string[];
  /** This verifier: always current, it answers with its own manifest. */
  self: Candidate;
  pinned: readonly Candidate[];
  now: number;
  skew: number;
}

export function resolveProfile(i: ResolveInput): Resolution {
  const excluded = new Set(i.exclude);
  const set = [i.self, ...i.pinned.filter((c) => c.verifier_id !== i.self.verifier_id).sort((a, b) => (a.verifier_id < b.verifier_id ? -1 : a.verifier_id > b.verifier_id ? 1 : 0))];
  const queried = [...new Set(i.exclude)];
  for (const c of set) {
    if (excluded.has(c.verifier_id)) continue;
    queried.push(c.verifier_id);
    if (c.manifest && manifestCurrent(c.manifest, i.now, i.skew) && keyValidNow(c.key_valid_until ?? null, i.now) && declares(c.manifest, i.profile)) {
      return { result: "HELD", profile: i.profile, verifier_id: c.verifier_id, here: c === i.self, queried_verifiers: queried };
    }
  }
  const declaring = set.filter((c) => c.manifest !== null && declares(c.manifest, i.profile));
  if (declaring.length === 0) return { result: "UNDECIDED", profile: i.profile, reason: "NO_COMPARISON_RELATION", queried_verifiers: queried };
  const consult = declaring.filter((c) => !excluded.has(c.verifier_id)).map((c) => c.verifier_id);
  if (consult.length > 0) return { result: "UNDECIDED", profile: i.profile, reason: "PROFILE_NOT_HELD", consult, queried_verifiers: queried };
  return { result: "SET_EXHAUSTED", profile: i.profile, queried_verifiers: queried };
}
