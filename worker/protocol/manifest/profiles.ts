/**
 * The profiles countersign evaluates, as its capability manifest declares them: what one
 * comparison under each judges (its comparison scope). Routing matches profiles by id.
 */
import type { Profile } from "./manifest.js";

export const COUNTERSIGN_PROFILES: readonly Profile[] = [
  /** CCS v1.3 enforcement validation of one receipt against the presented request, response and runtime context (§12.2). */
  { id: "ccs/1.3/receipt-verification", comparison_scope: "receipt" },
  /** A same-org or self-contained cross-org Evidence Envelope around one receipt (§11). */
  { id: "ccs/1.3/evidence-envelope", comparison_scope: "envelope" },
  /** A whole evidence chain, full or spot, under an optional seal (§11). */
  { id: "ccs/1.3/evidence-chain", comparison_scope: "chain" },
  /** A Command judged by the sixteen structural rules and the policy floor, signed as a receipt (§3, Appendix E). */
  { id: "ccs/1.3/intake", comparison_scope: "command" },
  /** An EC-Agent claim/evidence receipt against its corpus and event trace. */
  { id: "ec-agent/receipt", comparison_scope: "claim" },
  /** Deterministic replay of an EC-Agent receipt bundle. */
  { id: "ec-agent/bundle-replay", comparison_scope: "bundle" },
];

export const PROFILE_IDS: readonly string[] = COUNTERSIGN_PROFILES.map((p) => p.id);
