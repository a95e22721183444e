/**
 * AdminRegistry: the one object (named "registry") through which every admin read-check-write of
 * KV's relying-party and anchor records runs, one at a time. KV has no compare-and-set; this
 * object's queue stands in for it. Each call reads KV fresh, checks and writes in turn, and the
 * next call starts only once the previous one has answered (or failed), so two rotations handed
 * one token cannot both succeed and concurrent pins of one issuer each carry the others' keys into
 * `previous_keys`. It keeps nothing of its own (SQLite-backed only as every new class must be);
 * the records stay in KV, which the verify path reads without calling this object.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { dependencyTimeout, ledgerShardKey } from "../worker/config.js";
import { durableLedgerStub, kvAnchorStore, kvRelyingPartyWrites, ledgerClient } from "../worker/stores.js";
import { ApiError } from "../worker/http.js";
import { commitManifest, commitManifestDrop, commitPin, refused, type Committed } from "../worker/admin-registry.js";
import type { AnchorRecord } from "../worker/protocol/anchors.js";
import type { PinnedManifest } from "../worker/protocol/manifest/pinning.js";
import type { RelyingParty } from "../worker/protocol/relying-parties.js";

export class AdminRegistry extends DurableObject<Env> {
  /** The last queued call; the next one starts when it settles. */
  private tail: Promise<unknown> = Promise.resolve();

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private stores() {
    const timeout = dependencyTimeout(this.env);
    return {
      anchors: kvAnchorStore(this.env, timeout, new Map()),
      ledgers: ledgerClient(durableLedgerStub(this.env), timeout, ledgerShardKey(this.env)),
      parties: kvRelyingPartyWrites(this.env, timeout),
    };
  }

  /** An ApiError (a refusal, or a dependency that failed) crosses the RPC boundary as its fields. */
  private static async answer<T>(work: () => Promise<Committed<T>>): Promise<Committed<T>> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof ApiError) return refused(err.status, err.code, err.detail);
      throw err;
    }
  }

  createParty(party: RelyingParty) {
    return this.serial(() => this.stores().parties.create(party));
  }

  rotateParty(name: string, tokenSha256: string) {
    return this.serial(() => this.stores().parties.rotate(name, tokenSha256));
  }

  deleteParty(name: string) {
    return this.serial(() => this.stores().parties.delete(name));
  }

  pinAnchor(record: AnchorRecord, at: number) {
    return this.serial(() => AdminRegistry.answer(() => { const { anchors, ledgers } = this.stores(); return commitPin(anchors, ledgers, record, at); }));
  }

  dropManifestSignedBy(issuer: string, fingerprint: string) {
    return this.serial(() => commitManifestDrop(this.stores().anchors, issuer, fingerprint));
  }

  pinManifest(issuer: string, pinned: PinnedManifest) {
    return this.serial(() => AdminRegistry.answer(() => { const { anchors, ledgers } = this.stores(); return commitManifest(anchors, ledgers, issuer, pinned); }));
  }
}
