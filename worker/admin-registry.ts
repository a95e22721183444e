/**
 * The admin registry's writes, serialised. KV has no compare-and-set: two admin calls that each
 * read a record, check it and write it back could both pass their check (two parties handed one
 * token). Every such read-check-write of the relying-party records is therefore run by the one
 * AdminRegistry Durable Object (durable-objects/admin-registry.ts), one at a time, from a fresh KV
 * read to its last KV write. The verify path never calls it: it still reads KV (through
 * its isolate cache), and KV still reaches other locations eventually.
 */
import type { RelyingParty } from "./protocol/relying-parties.js";
import { withTimeout } from "./http.js";
import type { Env } from "./env.js";

/** The writes the admin routes make through the registry. */
export interface AdminRegistryCalls {
  createParty(party: RelyingParty): Promise<"created" | "name-taken" | "token-taken">;
  /** The party before and after; the old token's cached copies are the caller's to drop. */
  rotateParty(name: string, tokenSha256: string): Promise<{ before: RelyingParty; after: RelyingParty } | "not-found" | "token-taken">;
  deleteParty(name: string): Promise<RelyingParty | null>;
}

/** The one AdminRegistry object every isolate's admin writes go through. */
export const ADMIN_REGISTRY_NAME = "registry";

export function durableAdminRegistry(env: Env, timeoutMs: number): AdminRegistryCalls {
  const stub = () => env.ADMIN_REGISTRY.get(env.ADMIN_REGISTRY.idFromName(ADMIN_REGISTRY_NAME)) as unknown as AdminRegistryCalls;
  // Queued behind other admin writes: a few KV round trips each, so the wait is bounded by more than one call's timeout.
  const call = <T>(work: Promise<T>) => withTimeout(work, timeoutMs * 4, "admin registry");
  return {
    createParty: (party) => call(stub().createParty(party)),
    rotateParty: (name, sha) => call(stub().rotateParty(name, sha)),
    deleteParty: (name) => call(stub().deleteParty(name)),
  };
}
