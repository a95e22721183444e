import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { ApiError, percentDecodes, strictQuery } from "../http.js";
import { cursorMac } from "./admin.js";
import { DEFAULT_SEQUENCE_POLICY, type SequenceResetCursor } from "../protocol/ledger.js";
import { issuerProblem } from "../protocol/anchors.js";
import { DEFAULT_VERIFIER_CLASS } from "../protocol/conformance/verifier-class.js";
import { dependencyTimeout } from "../config.js";
import { cacheWrites, countCacheWrite, readReview } from "../stores.js";
import type { AnchorLedgerState } from "../../durable-objects/issuer-ledger.js";

/** How long an isolate answers an issuer's ledger state and review flag from memory, and for how many issuers. */
export const ISSUER_VIEW_TTL_MS = 5_000;
const ISSUER_VIEW_ENTRIES = 256;
/** How many pages of one issuer's sequence resets an entry keeps (the newest page and older ones by cursor). */
const ISSUER_VIEW_PAGES = 8;

/**
 * The issuer view's Durable Object reads, by issuer, kept a few seconds: the route is public, and
 * each uncached call read the issuer's first ledger shard (which its verifications claim on) and
 * the one DecisionStats object, so unauthenticated traffic could load both. The ledger's part is
 * kept per page of sequence resets (`""` for the newest, else the cursor), so a cursor does not
 * bypass the cache; every page of an entry expires with it. The verify path never reads this; a
 * revocation or a sequence reset made through this isolate evicts the issuer's entry (forgetIssuerView).
 */
export type IssuerViewCache = Map<string, { at: number; review: unknown; pages: Map<string, AnchorLedgerState> }>;

/**
 * Drops one issuer's entry (or every entry) after an admin write through this isolate or a flush
 * of its decision counts; counted, so a view read in flight across it is answered as read but not
 * cached over it (a view in flight across a revocation here put the unrevoked state
 * back for 5 s).
 */
export function forgetIssuerView(cache: IssuerViewCache, issuer?: string): void {
  countCacheWrite(cache);
  if (issuer === undefined) cache.clear();
  else cache.delete(issuer);
}

/**
 * A `sequence_resets_next_cursor`: the position (at, rowid) of the oldest reset a page listed and a
 * MAC over it and the issuer (32 hex, HMAC-SHA256 under a key derived from ADMIN_TOKEN), so only a
 * cursor this view answered is read: any well-formed position was taken, and each new one cost an
 * uncached ledger read on this public route.
 */
async function cursorText(env: Env, issuer: string, cursor: SequenceResetCursor | null): Promise<string | null> {
  if (cursor === null) return null;
  const position = `${cursor.at}_${cursor.rowid}`;
  return `${position}.${await cursorMac(env.ADMIN_TOKEN, `${issuer}\n${position}`, "sequence-reset")}`;
}

/** The position a `resets_cursor` names; 400 when it is not a `sequence_resets_next_cursor` of this issuer's view. */
async function cursorOf(env: Env, issuer: string, text: string): Promise<SequenceResetCursor> {
  const match = /^(([0-9][0-9.e+-]{0,31})_([1-9][0-9]{0,15}))\.([0-9a-f]{32})$/.exec(text);
  const at = match ? Number(match[2]) : NaN;
  const rowid = match ? Number(match[3]) : NaN;
  if (!match || !Number.isFinite(at) || String(at) !== match[2] || !Number.isSafeInteger(rowid) || match[4] !== (await cursorMac(env.ADMIN_TOKEN, `${issuer}\n${match[1]}`, "sequence-reset"))) {
    throw new ApiError(400, "MALFORMED_REQUEST", "resets_cursor must be the sequence_resets_next_cursor of a previous answer for this issuer");
  }
  return { at, rowid };
}

const VIEW_QUERY: ReadonlySet<string> = new Set(["resets_cursor"]);

/**
 * The issuer a path names: 400 when it does not decode or cannot be an issuer, before any read.
 * Decoded once: the router has already decoded the parameter, so decoding it again would read an
 * issuer's own `%41` as `A` (another issuer) and refuse one holding `%`. Whether the path was valid
 * percent-encoded UTF-8 is judged on the request's own path, which the router's decoding hides.
 */
function issuerOf(c: Context<AppEnv>): string {
  if (!percentDecodes(c)) throw new ApiError(400, "MALFORMED_REQUEST", "the issuer in the path is not valid percent-encoded UTF-8");
  const issuer = c.req.param("issuer") ?? "";
  const problem = issuerProblem(issuer);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  return issuer;
}

export const issuerRoutes = new Hono<AppEnv>()
  /**
   * The pinned public anchor of one issuer: current and previous keys, each marked revoked or
   * not (by fingerprint, from the issuer's ledger), the revocations and the audited sequence resets
   * (the newest SEQUENCE_RESETS_PAGE, or those before `?resets_cursor=`, with their total and the
   * cursor to older ones); its verifier class and, from the decision counters, whether it is
   * flagged for review (13.7).
   */
  .get("/:issuer{.+}", async (c) => {
  const issuer = issuerOf(c);
  const query = strictQuery(c, VIEW_QUERY);
  const before = query.resets_cursor === undefined ? null : await cursorOf(c.env, issuer, query.resets_cursor);
  const page = query.resets_cursor ?? "";
  const { anchors, ledgers, reviewThreshold, issuerViews } = c.get("services");
  const record = await anchors.get(issuer);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} is not pinned`);
  const shards = record.ledger_shards ?? 1;
  let held = issuerViews.get(issuer);
  let state: AnchorLedgerState | undefined;
  const evictions = cacheWrites(issuerViews);
  const evicted = () => cacheWrites(issuerViews) !== evictions;
  if (!held || Date.now() - held.at >= ISSUER_VIEW_TTL_MS) {
    const [read, review] = await Promise.all([
      ledgers.anchorState(issuer, shards, before),
      // Operational counters, not evidence: when they do not answer, the flag is unknown (null).
      readReview(c.env, issuer, reviewThreshold, dependencyTimeout(c.env)).catch(() => null),
    ]);
    state = read;
    held = { at: Date.now(), review, pages: new Map([[page, read]]) };
    if (!evicted()) {
      issuerViews.delete(issuer);
      // The oldest entry (Map order is insertion order) makes room.
      if (issuerViews.size >= ISSUER_VIEW_ENTRIES) issuerViews.delete(issuerViews.keys().next().value!);
      issuerViews.set(issuer, held);
    }
  } else if (!(state = held.pages.get(page))) {
    state = await ledgers.anchorState(issuer, shards, before);
    if (!evicted()) {
      if (held.pages.size >= ISSUER_VIEW_PAGES) held.pages.delete(held.pages.keys().next().value!);
      held.pages.set(page, state);
    }
  }
  const { revoked, sequence_resets } = state;
  const { review } = held;
  const revokedKeys = new Set(revoked.map((r) => r.fingerprint));
  return c.json({
    issuer: record.issuer,
    org_id: record.org_id,
    pinned_at: record.pinned_at,
    ledger_shards: shards,
    sequence_policy: record.sequence_policy ?? DEFAULT_SEQUENCE_POLICY,
    chain_sealer: record.chain_sealer === true,
    keys: record.keys.map((k) => ({ ...k, short_fingerprint: k.fingerprint.slice(0, 16), revoked: revokedKeys.has(k.fingerprint) })),
    previous_keys: (record.previous_keys ?? []).map((k) => ({ ...k, revoked: revokedKeys.has(k.fingerprint) })),
    revoked,
    sequence_resets: sequence_resets.resets,
    sequence_resets_total: sequence_resets.total,
    sequence_resets_next_cursor: await cursorText(c.env, issuer, sequence_resets.next),
    verifier_class: record.verifier_class ?? DEFAULT_VERIFIER_CLASS,
    audit: record.audit ?? null,
    // The secret's name is configuration; the secret never leaves the Worker.
    level0: record.shared_secret !== undefined,
    review,
  });
});
