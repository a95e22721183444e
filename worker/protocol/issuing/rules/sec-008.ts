import { allow, deny, type InputRule } from "./types.js";

/**
 * The one SEC-008 predicate: a config_hash is acceptable when no set is pinned, or when it is in
 * the pinned set. Intake judges this deployment's own configuration with it; the verification
 * path judges a presented receipt's config_hash against its issuer's pinned `config_hashes`.
 */
export function configHashPinned(configHash: string, pinned: readonly string[] | null | undefined): boolean {
  return pinned === null || pinned === undefined || pinned.includes(configHash);
}

export const SEC_008: InputRule = {
  name: "SEC-008",
  trigger: "a set of config hashes is pinned and the canonical config_hash is not in it",
  scope: "the config_hash value compared to the pinned set",
  judge({ configHash, pinnedConfigHashes }) {
    return configHashPinned(configHash, pinnedConfigHashes) ? allow() : deny("SEC-008: config_hash is not in the pinned set");
  },
};
