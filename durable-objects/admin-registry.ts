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
import { PendingKv, serialAdminRegistry, type AdminRegistryCalls } from "../worker/admin-registry.js";
import type { AnchorRecord } from "../worker/protocol/anchors.js";
import type { ManifestBindingRecord, PinnedManifest } from "../worker/protocol/manifest/pinning.js";
import type { RelyingParty } from "../worker/protocol/relying-parties.js";

export class AdminRegistry extends DurableObject<Env> {
  /** KV calls a timeout abandoned: the next call waits for them (up to the time a caller waits for its call), so none lands after it read. */
  private readonly pending = new PendingKv(dependencyTimeout(this.env) * 4);

  private readonly calls: AdminRegistryCalls = serialAdminRegistry(() => {
    const timeout = dependencyTimeout(this.env);
    const env = { ...this.env, ANCHORS: this.pending.track(this.env.ANCHORS) };
    return {
      anchors: kvAnchorStore(env, timeout, new Map()),
      ledgers: ledgerClient(durableLedgerStub(this.env), timeout, ledgerShardKey(this.env)),
      parties: kvRelyingPartyWrites(env, timeout),
    };
  }, this.pending);

  createParty(party: RelyingParty) {
    return this.calls.createParty(party);
  }

  rotateParty(name: string, tokenSha256: string) {
    return this.calls.rotateParty(name, tokenSha256);
  }

  deleteParty(name: string) {
    return this.calls.deleteParty(name);
  }

  pinAnchor(record: AnchorRecord, at: number) {
    return this.calls.pinAnchor(record, at);
  }

  dropManifestSignedBy(issuer: string, fingerprint: string) {
    return this.calls.dropManifestSignedBy(issuer, fingerprint);
  }

  pinManifest(issuer: string, pinned: PinnedManifest, added: ManifestBindingRecord[]) {
    return this.calls.pinManifest(issuer, pinned, added);
  }
}
