/**
 * The admin registry's writes, serialised. KV has no compare-and-set: two admin calls that each
 * read a record, check it and write it back could both pass their check (two parties handed one
 * token) or each write over the other (keys dropped from an issuer's `previous_keys`). Every such
 * read-check-write of the relying-party records and of an issuer's anchor record is therefore run
 * by the one AdminRegistry Durable Object (durable-objects/admin-registry.ts), one at a time, from
 * a fresh KV read to its last KV write. The verify path never calls it: it still reads KV (through
 * its isolate cache), and KV still reaches other locations eventually.
 */
import { carryKeyHistory, keysValidAt, type AnchorRecord } from "./protocol/anchors.js";
import { joinBindings, type ManifestBindingRecord, type PinnedManifest } from "./protocol/manifest/pinning.js";
import type { RelyingParty } from "./protocol/relying-parties.js";
import { ApiError, withTimeout } from "./http.js";
import type { AnchorStore, LedgerClient, RelyingPartyWrites } from "./stores.js";
import type { Env } from "./env.js";

/** What a serialised write answers: its result, or the refusal the route answers as an ApiError. */
export type Committed<T> = { ok: true; value: T } | { ok: false; status: number; code: string; detail: string };

export const refused = (status: number, code: string, detail: string): Committed<never> => ({ ok: false, status, code, detail });

/** The route's answer for a refusal the registry made (an ApiError does not survive the RPC). */
export function unwrap<T>(committed: Committed<T>): T {
  if (committed.ok) return committed.value;
  throw new ApiError(committed.status as ApiError["status"], committed.code as ApiError["code"], committed.detail);
}

/** The writes the admin routes make through the registry. */
export interface AdminRegistryCalls {
  createParty(party: RelyingParty): Promise<"created" | "name-taken" | "token-taken">;
  /** The party before and after; the old token's cached copies are the caller's to drop. */
  rotateParty(name: string, tokenSha256: string): Promise<{ before: RelyingParty; after: RelyingParty } | "not-found" | "token-taken">;
  deleteParty(name: string): Promise<RelyingParty | null>;
  pinAnchor(record: AnchorRecord, at: number): Promise<Committed<AnchorRecord>>;
  dropManifestSignedBy(issuer: string, fingerprint: string): Promise<AnchorRecord | null>;
  /** `added`: the bindings of the configurations given with the pin, joined to those held when it is written. */
  pinManifest(issuer: string, pinned: PinnedManifest, added: ManifestBindingRecord[]): Promise<Committed<AnchorRecord>>;
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
    pinAnchor: (record, at) => call(stub().pinAnchor(record, at)),
    dropManifestSignedBy: (issuer, fingerprint) => call(stub().dropManifestSignedBy(issuer, fingerprint)),
    pinManifest: (issuer, pinned, added) => call(stub().pinManifest(issuer, pinned, added)),
  };
}

/** The stores a serialised write reads and writes, made afresh for each call (no cache). */
export interface RegistryStores {
  anchors: AnchorStore;
  ledgers: LedgerClient;
  parties: RelyingPartyWrites;
}

/** A refusal thrown as an ApiError (or a dependency that failed) crosses the RPC boundary as its fields. */
async function answered<T>(work: () => Promise<Committed<T>>): Promise<Committed<T>> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ApiError) return refused(err.status, err.code, err.detail);
    throw err;
  }
}

/**
 * The KV calls a registry call made and that have not settled yet. A KV call that timed out
 * (VerifierUnavailable after DEPENDENCY_TIMEOUT_MS) is abandoned, not cancelled: its write can
 * still land after the next call's read, and write over it. The queue waits for
 * them before the next call starts, up to a bound so a call that never settles cannot stop it.
 */
export class PendingKv {
  /** Each unsettled call and the instant (ms) past which it is no longer waited for (set by the first wait for it). */
  private readonly pending = new Map<Promise<void>, number | null>();

  constructor(private readonly boundMs: number) {}

  /** `kv` with each of its calls noted here until it settles. */
  track<K extends object>(kv: K): K {
    return new Proxy(kv, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (result instanceof Promise) {
            const settled = result.then(() => undefined, () => undefined);
            this.pending.set(settled, null);
            void settled.then(() => this.pending.delete(settled));
          }
          return result;
        };
      },
    });
  }

  /**
   * Resolves once every call noted so far has settled, or after the bound: `boundMs` from the first
   * wait for each call. A call still unsettled past its bound is forgotten: one that never settles
   * holds the queue once, not every call after it.
   */
  settled(): Promise<void> {
    const now = Date.now();
    let last = now;
    for (const [p, until] of this.pending) {
      if (until !== null && until <= now) this.pending.delete(p);
      else last = Math.max(last, until ?? now + this.boundMs);
      if (until === null) this.pending.set(p, now + this.boundMs);
    }
    if (this.pending.size === 0) return Promise.resolve();
    const waitMs = last - now;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    return Promise.race([Promise.all([...this.pending.keys()]).then(() => undefined), bound]).finally(() => clearTimeout(timer));
  }
}

/**
 * The registry's calls run one at a time, each from a fresh read to its last write: the next starts
 * once the previous one has answered or failed and, with `pending`, once the KV calls it abandoned
 * on a timeout have settled too (PendingKv). The Durable Object holds one; the Node-side service
 * (the CLI's offline verifier, Node tests) holds one per process, which is its whole world.
 */
export function serialAdminRegistry(stores: () => RegistryStores, pending?: PendingKv): AdminRegistryCalls {
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work);
    tail = run.catch(() => undefined).then(() => pending?.settled());
    return run;
  };
  return {
    createParty: (party) => serial(() => stores().parties.create(party)),
    rotateParty: (name, sha) => serial(() => stores().parties.rotate(name, sha)),
    deleteParty: (name) => serial(() => stores().parties.delete(name)),
    pinAnchor: (record, at) => serial(() => answered(() => { const { anchors, ledgers } = stores(); return commitPin(anchors, ledgers, record, at); })),
    dropManifestSignedBy: (issuer, fingerprint) => serial(() => commitManifestDrop(stores().anchors, issuer, fingerprint)),
    pinManifest: (issuer, pinned, added) => serial(() => answered(() => { const { anchors, ledgers } = stores(); return commitManifest(anchors, ledgers, issuer, pinned, added); })),
  };
}

/**
 * A pin's write, against the anchor as KV holds it now: its ledger_shards must be unchanged, no key
 * may be another issuer's, the keys it replaces join `previous_keys` (and lose their sequence
 * state first), and a manifest whose signer is still pinned and valid at its published_at stays.
 */
export async function commitPin(anchors: AnchorStore, ledgers: LedgerClient, next: AnchorRecord, at: number): Promise<Committed<AnchorRecord>> {
  const shards = next.ledger_shards ?? 1;
  const existing = await anchors.fresh(next.issuer);
  if (existing && (existing.ledger_shards ?? 1) !== shards) {
    return refused(409, "ANCHOR_SHARDS_IMMUTABLE", `ledger_shards is ${existing.ledger_shards ?? 1} for this issuer and cannot change: moving nonces between shards would open a replay window`);
  }
  const holders = await Promise.all(next.keys.map((k) => anchors.keyHolder(k.fingerprint)));
  const shared = next.keys.filter((_, i) => holders[i] !== null && holders[i]!.issuer !== next.issuer);
  if (shared.length > 0) {
    const named = shared.map((k) => `${k.kid} (${k.fingerprint.slice(0, 16)})`).join(", ");
    return refused(409, "ANCHOR_KEY_IN_USE", `key ${named} is pinned for another issuer; a key belongs to one issuer, so that revoking it revokes it everywhere`);
  }
  const carried = carryKeyHistory(next, existing, at);
  const manifest = existing?.manifest;
  const signer = manifest ? carried.record.keys.filter((k) => k.fingerprint === manifest.document.signing_key_fingerprint) : [];
  const record = manifest && keysValidAt(signer, manifest.document.published_at).length > 0 ? { ...carried.record, manifest } : carried.record;
  // Sequence state goes before the record changes: a failure here leaves the old anchor in place, and a retry redoes it.
  await ledgers.forgetKeys(record.issuer, shards, carried.unpinned.map((k) => k.fingerprint));
  await Promise.all(record.keys.map((k, i) => (holders[i] === null ? anchors.putKeyHolder(k.fingerprint, { issuer: record.issuer, kid: k.kid }) : undefined)));
  await anchors.put(record);
  return { ok: true, value: record };
}

/** Drops the anchor's manifest when `fingerprint` signed it (its key was revoked); the record written, or null. */
export async function commitManifestDrop(anchors: AnchorStore, issuer: string, fingerprint: string): Promise<AnchorRecord | null> {
  const current = await anchors.fresh(issuer);
  if (current?.manifest?.document.signing_key_fingerprint !== fingerprint) return null;
  const { manifest: _dropped, ...rest } = current;
  await anchors.put(rest);
  return rest;
}

/**
 * A manifest pin's write, against the anchor as KV holds it now: refused when the issuer is no
 * longer pinned, when its signing key is no longer pinned (or was revoked), or no longer valid at
 * the manifest's published_at or at the pin's time (a re-pin narrowed its window), or when a
 * manifest published later is pinned by now; otherwise written beside the current anchor, with the
 * configurations given (`added`) joined to the bindings held now, not to those the route read:
 * pins of one verifier sent at once each keep the others' configurations.
 */
export async function commitManifest(anchors: AnchorStore, ledgers: LedgerClient, issuer: string, pinned: PinnedManifest, added: readonly ManifestBindingRecord[]): Promise<Committed<AnchorRecord>> {
  const current = await anchors.fresh(issuer);
  if (!current) return refused(404, "NOT_FOUND", `issuer ${issuer} is not pinned; pin its anchor first`);
  const { published_at } = pinned.document;
  const fingerprint = pinned.document.signing_key_fingerprint;
  const revoked = new Set((await ledgers.revocations(issuer, current.ledger_shards ?? 1)).map((r) => r.fingerprint));
  const signer = current.keys.filter((k) => k.fingerprint === fingerprint && !revoked.has(k.fingerprint));
  const valid = keysValidAt(signer, published_at).filter((k) => k.not_after === null || pinned.pinned_at <= k.not_after);
  if (valid.length === 0) {
    return refused(400, "MANIFEST_KEY_UNKNOWN", `the key that signed the manifest (${fingerprint.slice(0, 16)}) is no longer pinned for ${issuer}, or no longer valid at its published_at ${published_at}`);
  }
  const held = current.manifest?.document;
  if (held && published_at < held.published_at) {
    return refused(409, "MANIFEST_SUPERSEDED", `the pinned manifest of ${issuer} was published at ${held.published_at}; this one, published at ${published_at}, is older`);
  }
  const record = { ...current, manifest: { ...pinned, bindings: joinBindings(current.manifest?.bindings ?? [], added) } };
  await anchors.put(record);
  return { ok: true, value: record };
}
