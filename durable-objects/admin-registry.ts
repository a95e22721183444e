/**
 * AdminRegistry: the one object (named "registry") through which every admin read-check-write of
 * KV's relying-party records runs, one at a time. KV has no compare-and-set; this object's queue
 * stands in for it. Each call reads KV fresh, checks and writes in turn, and the next call starts
 * only once the previous one has answered (or failed), so two rotations handed one token cannot
 * both succeed. It keeps nothing of its own (SQLite-backed only as every new class must be); the
 * records stay in KV, which the verify path reads without calling this object.
 */
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../worker/env.js";
import { dependencyTimeout } from "../worker/config.js";
import { kvRelyingPartyWrites } from "../worker/stores.js";
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
    return { parties: kvRelyingPartyWrites(this.env, dependencyTimeout(this.env)) };
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
}
