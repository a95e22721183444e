import { decodeSharedSecret } from "../protocol/conformance/level0.js";
import { auditDateProblem } from "../protocol/conformance/verifier-class.js";
import { forgetOwnKeyCheck } from "../own-key.js";
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { requireAdmin } from "../auth.js";
import { audiences, dependencyTimeout, freshnessPolicy, ledgerShardKey, MAX_ADMIN_BODY } from "../config.js";
import type { z } from "zod";
import { KeyCall, Registration, ResetCall, TokenCall } from "../contract/schemas.js";
import { ApiError, jsonBody, readOptionalStrictJson, readStrictJson, strictQuery, validateBody, withTimeout } from "../http.js";

/** GET /v1/admin/stats and the relying-party list take these parameters, each once. */
const STATS_QUERY: ReadonlySet<string> = new Set(["minutes"]);
const LIST_QUERY: ReadonlySet<string> = new Set(["limit", "cursor"]);
import { KEY_USES_PAGE, type Withdrawal } from "../protocol/ledger.js";
import { DEFAULT_CLOCK_SKEW } from "../protocol/receipt.js";
import { INTAKE_TENANT } from "../journal-store.js";
import { buildAnchorRecord, issuerProblem, keysEverPinned, pinnedIssuer, withdrawnReceiptKvKey, type AnchorRecord } from "../protocol/anchors.js";
import type { WithdrawnHop } from "../../durable-objects/evidence-chain.js";
import { sha256Hex } from "../protocol/digest.js";
import { HEX64, toHex } from "../protocol/encoding.js";
import { isHttpsUri, MAX_URI_BYTES, uriMemoSize } from "../protocol/receipt.js";
import { newToken, parseRegistration, parseTokenCall, RELYING_PARTY_NAME, RELYING_PARTY_NAME_RULE } from "../protocol/relying-parties.js";
import { unwrap } from "../admin-registry.js";
import { readDecisionStats, RELYING_PARTY_PAGE_MAX, requireShardKey, RETIRED_TOKEN_TTL_SECONDS, type AnchorStore } from "../stores.js";
import { buildPinnedManifest, pinnedVerifierId } from "../protocol/manifest/pinning.js";
import { forgetIssuerView } from "./issuers.js";

/** This deployment's own secrets: none of them may be named as an issuer's Level 0 key. */
const OWN_SECRETS = new Set(["ADMIN_TOKEN", "SIGNING_KEY", "INTAKE_TOKEN", "DEMO_RP_TOKEN", "LEDGER_SHARD_KEY"]);

/** Secrets a supplied relying-party token may not equal (DEMO_RP_TOKEN is the demo party's own token). */
const OWN_TOKEN_SECRETS = ["ADMIN_TOKEN", "INTAKE_TOKEN", "SIGNING_KEY", "LEGACY_HMAC_KEY", "LEDGER_SHARD_KEY"];
/** The secrets that are keys written in hex: any case of the same digits is the same key. */
const HEX_SECRETS: ReadonlySet<string> = new Set(["SIGNING_KEY", "LEGACY_HMAC_KEY"]);
/** Whether `token` is the secret `name` holds (`value`): a hex key in any case of its digits. */
const sameSecret = (name: string, value: string | undefined, token: string): boolean =>
  value !== undefined && value !== "" && (HEX_SECRETS.has(name) ? value.toLowerCase() === token.toLowerCase() : value === token);

/** A Level 0 key's form (decodeSharedSecret's) in any case of its digits. */
const MIXED_CASE_HEX_KEY = /^([0-9a-fA-F]{2}){32,}$/;

/**
 * Whether `token` is, in any case of its hex digits, a key a Level 0 anchor can name: any variable
 * of this deployment holding a Level 0 key (decodeSharedSecret's form) under a name a pin accepts. The
 * relying party holding it could compute the HMAC of a 7-field receipt and have it accepted at
 * `level: 0` for the issuer pinned with it.
 */
const isLevel0Key = (env: object, token: string): boolean =>
  // Not the names no anchor may name (OWN_SECRETS): DEMO_RP_TOKEN is the demo party's own token, whatever its form.
  Object.entries(env).some(([name, value]) => !OWN_SECRETS.has(name) && typeof value === "string" && decodeSharedSecret(value) !== null && value === token.toLowerCase());

/**
 * The token a registration or a rotation hands out: the one supplied, or a fresh one. A relying party
 * is another organisation: handing it one of this deployment's own secrets (or a Level 0 key it
 * holds) as its token would let it sign through intake, administer the deployment or MAC receipts
 * with the same string.
 */
function partyToken(c: Context<AppEnv>, supplied: string | null): string {
  if (supplied !== null && (OWN_TOKEN_SECRETS.some((secret) => sameSecret(secret, (c.env as unknown as Record<string, string | undefined>)[secret], supplied)) || isLevel0Key(c.env, supplied))) {
    throw new ApiError(400, "MALFORMED_REQUEST", "token is one of this deployment's own secrets; supply a token of the relying party's own");
  }
  // A token in a Level 0 key's form (64+ hex digits) is that key in any case of its digits, and only
  // its SHA-256 is kept: a later Level 0 pin can look a held key up as written and in uppercase, not
  // in each of its mixed-case spellings. So such a token is taken in one case only.
  if (supplied !== null && MIXED_CASE_HEX_KEY.test(supplied) && supplied !== supplied.toLowerCase() && supplied !== supplied.toUpperCase()) {
    throw new ApiError(400, "MALFORMED_REQUEST", "token of 64 or more hex digits must be all lowercase or all uppercase (it is a Level 0 key's form, the same key in any case)");
  }
  return supplied ?? newToken(crypto.getRandomValues(new Uint8Array(32)));
}

/**
 * A relying-party page's `next_cursor`: KV's own cursor and a MAC over it (32 hex, HMAC-SHA256 under
 * a key derived from ADMIN_TOKEN). A cursor no page answered is refused here, as 400, rather than
 * handed to KV, whose answer to a made-up cursor is its own (an error, or a page from anywhere).
 */
const cursorKey = (adminToken: string, purpose: string) =>
  crypto.subtle.importKey("raw", new TextEncoder().encode(`countersign ${purpose} cursor\n${adminToken}`), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
/** 32 hex of an HMAC-SHA256 over `text` under a key derived from ADMIN_TOKEN for one kind of cursor. */
export const cursorMac = async (adminToken: string, text: string, purpose = "relying-party") =>
  toHex(new Uint8Array(await crypto.subtle.sign("HMAC", await cursorKey(adminToken, purpose), new TextEncoder().encode(text)))).slice(0, 32);

async function sealCursor(adminToken: string, kvCursor: string): Promise<string> {
  return `${kvCursor}.${await cursorMac(adminToken, kvCursor)}`;
}

/** KV's cursor inside a `next_cursor` this deployment answered; 400 for anything else. */
async function openCursor(adminToken: string, cursor: string): Promise<string> {
  const dot = cursor.lastIndexOf(".");
  const kvCursor = cursor.slice(0, dot);
  if (!/^[\x21-\x7e]{1,2048}$/.test(cursor) || dot < 1 || cursor.slice(dot + 1) !== (await cursorMac(adminToken, kvCursor))) {
    throw new ApiError(400, "MALFORMED_REQUEST", "cursor must be the next_cursor of a previous page");
  }
  return kvCursor;
}

/** Longest reason an audited reset may carry, characters. */
const MAX_REASON_LENGTH = 512;

/** `{issuer, kid}` or `{issuer, fingerprint}` (plus `reason` for a reset), checked; the issuer's anchor read. */
async function keyCall<T extends typeof KeyCall | typeof ResetCall>(c: Context<AppEnv>, schema: T) {
  const body = validateBody(schema, await readStrictJson(c, MAX_ADMIN_BODY)) as z.output<typeof ResetCall>;
  const { issuer, kid, fingerprint } = body;
  if ((kid === undefined) === (fingerprint === undefined)) throw new ApiError(400, "MALFORMED_REQUEST", "name the key by exactly one of kid and fingerprint");
  const problem = issuerProblem(issuer);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem);
  if (fingerprint !== undefined && !HEX64.test(fingerprint)) {
    throw new ApiError(400, "MALFORMED_REQUEST", "fingerprint must be 64 lowercase hex (SHA-256 of the raw key)");
  }
  const record = await c.get("services").anchors.fresh(issuer as string);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${issuer} is not pinned`);
  return { body, record, kid, fingerprint };
}

/** The one key among `keys` a kid or fingerprint names; a kid naming several different keys is ambiguous. */
function resolveKey(keys: { kid: string; fingerprint: string }[], ref: { kid?: string; fingerprint?: string }, record: AnchorRecord, which: string) {
  const named = keys.filter((k) => (ref.kid !== undefined ? k.kid === ref.kid : k.fingerprint === ref.fingerprint));
  const distinct = [...new Map(named.map((k) => [k.fingerprint, k])).values()];
  const label = ref.kid !== undefined ? `kid ${ref.kid}` : `fingerprint ${ref.fingerprint}`;
  if (distinct.length === 0) throw new ApiError(404, "NOT_FOUND", `issuer ${record.issuer} has no ${which} key with ${label}`);
  if (distinct.length > 1) throw new ApiError(400, "MALFORMED_REQUEST", `${label} named ${distinct.length} different keys of ${record.issuer}; name the key by fingerprint`);
  return distinct[0];
}

/**
 * The key a revocation names: one of the anchor's keys or previous keys, or, named by fingerprint,
 * a key its key-holder record says was pinned for this issuer. Before pins were serialised by the
 * AdminRegistry object, concurrent pins of one issuer could each write an anchor that lost the
 * others' keys from its history; the key-holder record, written per key before any anchor, keeps
 * such a key revocable.
 */
async function revocableKey(anchors: AnchorStore, record: AnchorRecord, ref: { kid?: string; fingerprint?: string }): Promise<{ kid: string; fingerprint: string }> {
  const known = keysEverPinned(record);
  if (ref.fingerprint === undefined || known.some((k) => k.fingerprint === ref.fingerprint)) return resolveKey(known, ref, record, "pinned");
  const holder = await anchors.keyHolder(ref.fingerprint);
  if (holder?.issuer !== record.issuer) return resolveKey(known, ref, record, "pinned");
  return { fingerprint: ref.fingerprint, kid: holder.kid ?? UNRECORDED_KID };
}

/** The kid a revocation records for a key whose key-holder record predates keeping it. */
const UNRECORDED_KID = "unrecorded";

const chainObject = (c: Context<AppEnv>, chainId: string) => c.env.EVIDENCE_CHAIN.get(c.env.EVIDENCE_CHAIN.idFromName(chainId)) as unknown as {
  withdraw(fingerprint: string, revokedAt: number): Promise<{ broken_at_hop: number | null; hops: WithdrawnHop[] }>;
  brokenBy(fingerprint: string): Promise<{ broken_at_hop: number | null }>;
};

/** Every live chain that took a hop signed by `fingerprint`, page by page from the issuer's first ledger shard. */
async function chainsSignedBy(c: Context<AppEnv>, issuer: string, shards: number, fingerprint: string): Promise<string[]> {
  const { ledgers } = c.get("services");
  const chains: string[] = [];
  for (let after: string | null = null; ; ) {
    const page = await ledgers.keyUses(issuer, shards, fingerprint, after);
    chains.push(...page.filter((u) => u.kind === "chain").map((u) => u.ref));
    if (page.length < KEY_USES_PAGE) return chains;
    after = page[page.length - 1].ref;
  }
}

/**
 * CCS §14, re-validating evidence in flight: every live chain holding a hop the key signed is told
 * of the revocation (it answers broken at that hop, its seal withdrawn), and every journal record
 * admitted under the key and still in flight is marked for reconciliation. Idempotent, so a
 * failed fan-out is retried by revoking again.
 */
async function revokeInFlight(c: Context<AppEnv>, issuer: string, shards: number, fingerprint: string, revokedAt: number) {
  const timeout = dependencyTimeout(c.env);
  const chains = await chainsSignedBy(c, issuer, shards, fingerprint);
  await Promise.all(chains.map(async (id) => {
    const { hops } = await withTimeout(chainObject(c, id).withdraw(fingerprint, revokedAt), timeout, "evidence chain");
    // Each hop the key signed, by receipt hash, for seals over documents of another chain_id.
    await Promise.all(hops.map((h) => withTimeout(c.env.ANCHORS.put(withdrawnReceiptKvKey(h.receipt_hash), JSON.stringify({ chain_id: id, hop: h.hop, fingerprint, revoked_at: h.revoked_at })), timeout, "anchor store")));
  }));
  const { journal, now, anchors, ledgers } = c.get("services");
  const policy = freshnessPolicy(c.env);
  const records = await journal(INTAKE_TENANT).revokeKey(fingerprint, revokedAt, Math.floor(now()), policy.skewCap);
  // The children marked via a delegation are this deployment's own receipts: each one's nonce is
  // withdrawn in its issuer's ledger (the shard it maps to), so that one not yet presented is
  // refused RECEIPT_WITHDRAWN there, with no read added to the verification's accepting path.
  if (records.some((r) => r.via === "delegation")) {
    const byIssuer = new Map<string, Withdrawal[]>();
    for (const r of await journal(INTAKE_TENANT).delegatedReceipts(fingerprint)) {
      const list = byIssuer.get(r.issuer) ?? [];
      list.push({ nonce: r.nonce, retainUntil: r.expires_at + Math.min(r.max_clock_skew ?? DEFAULT_CLOCK_SKEW, policy.skewCap), revokedAt });
      byIssuer.set(r.issuer, list);
    }
    for (const [issuer, withdrawals] of byIssuer) {
      // An issuer not pinned here has no ledger, and its receipts are refused UNTRUSTED_ISSUER anyway.
      const anchor = await anchors.fresh(issuer);
      if (anchor) await ledgers.withdraw(issuer, anchor.ledger_shards ?? 1, withdrawals);
    }
  }
  return { chains: chains.length, journal_records: records.length };
}

/** A supplied token a party holds, or gave up less than RETIRED_TOKEN_TTL_SECONDS ago (worker/stores.ts). Made when answered: stores.js may not be evaluated yet when this module is. */
const tokenTaken = () => `that token is a relying party's, or was given up by one less than ${RETIRED_TOKEN_TTL_SECONDS} s ago (other isolates may still take it as that party's); supply a different one`;

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  /** Registers a relying party; the token is answered once and stored only as its SHA-256. */
  .post("/relying-parties", jsonBody(Registration), async (c) => {
  const parsed = parseRegistration(validateBody(Registration, await readStrictJson(c, MAX_ADMIN_BODY)), audiences(c.env));
  if (!parsed.ok) throw new ApiError(400, "MALFORMED_REQUEST", parsed.detail);
  const { name, audiences: allowed, token: supplied, min_verifier_class } = parsed.registration;
  const { now, relyingParties } = c.get("services");
  const token = partyToken(c, supplied);
  const floor = Object.keys(min_verifier_class).length > 0 ? { min_verifier_class } : {};
  const created = await relyingParties.create({ name, audiences: allowed, token_sha256: await sha256Hex(token), created_at: Math.floor(now()), registration: toHex(crypto.getRandomValues(new Uint8Array(8))), ...floor });
  if (created === "name-taken") throw new ApiError(409, "RELYING_PARTY_EXISTS", `relying party ${name} exists; POST /v1/admin/relying-parties/${name}/token issues it a new token`);
  if (created === "token-taken") throw new ApiError(409, "RELYING_PARTY_EXISTS", tokenTaken());
  return c.json({ name, token, audiences: allowed, ...floor }, 201);
})
  .get("/relying-parties", async (c) => {
  const query = strictQuery(c, LIST_QUERY);
  const limitText = query.limit;
  const limit = limitText === undefined ? RELYING_PARTY_PAGE_MAX : /^[0-9]{1,3}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= RELYING_PARTY_PAGE_MAX)) throw new ApiError(400, "MALFORMED_REQUEST", `limit must be an integer from 1 to ${RELYING_PARTY_PAGE_MAX}`);
  const cursor = query.cursor === undefined ? null : await openCursor(c.env.ADMIN_TOKEN, query.cursor);
  const { parties, cursor: next } = await c.get("services").relyingParties.list({ limit, cursor });
  return c.json({ next_cursor: next === null ? null : await sealCursor(c.env.ADMIN_TOKEN, next), relying_parties: parties.map(({ name, audiences, created_at, min_verifier_class }) => ({ name, audiences, created_at, ...(min_verifier_class ? { min_verifier_class } : {}) })) });
})
  /**
   * Replaces a relying party's token, keeping everything else (name, audiences, floor, and the
   * registration its records are kept under); the new token is answered once. Body `{}` (or none)
   * for a generated token, or `{token}`.
   */
  .post("/relying-parties/:name/token", async (c) => {
  const name = c.req.param("name");
  if (!RELYING_PARTY_NAME.test(name)) throw new ApiError(400, "MALFORMED_REQUEST", `name must be ${RELYING_PARTY_NAME_RULE}`);
  const body = validateBody(TokenCall, await readOptionalStrictJson(c, MAX_ADMIN_BODY));
  const parsed = parseTokenCall(body);
  if (!parsed.ok) throw new ApiError(400, "MALFORMED_REQUEST", parsed.detail);
  const token = partyToken(c, parsed.token);
  const rotated = await c.get("services").relyingParties.rotate(name, await sha256Hex(token));
  if (rotated === "not-found") throw new ApiError(404, "NOT_FOUND", `no relying party ${name}`);
  if (rotated === "token-taken") throw new ApiError(409, "RELYING_PARTY_EXISTS", tokenTaken());
  const floor = rotated.min_verifier_class ? { min_verifier_class: rotated.min_verifier_class } : {};
  return c.json({ name, token, audiences: rotated.audiences, ...floor }, 200);
})
  /** Revokes a relying party's token: its next call is 401. */
  .delete("/relying-parties/:name", async (c) => {
  const name = c.req.param("name");
  if (!RELYING_PARTY_NAME.test(name)) throw new ApiError(400, "MALFORMED_REQUEST", `name must be ${RELYING_PARTY_NAME_RULE}`);
  if (!(await c.get("services").relyingParties.delete(name))) throw new ApiError(404, "NOT_FOUND", `no relying party ${name}`);
  return c.json({ name, deleted: true });
})
  /**
   * Pins or replaces an issuer's anchor. A revoked key can never be pinned again, under any kid
   * and for any issuer: the issuer's own ledger answers for its keys (strongly consistent), the
   * global `revoked-key:<fingerprint>` records for keys revoked elsewhere. Keys this pin replaces
   * join the anchor's `previous_keys` (so they can still be revoked) and lose their sequence state.
   */
  .put("/anchors", async (c) => {
  const { now, anchors, ledgers } = c.get("services");
  const at = Math.floor(now());
  const built = await buildAnchorRecord(await readStrictJson(c, MAX_ADMIN_BODY), at);
  if (built.kind === "invalid") throw new ApiError(400, built.code, built.errors.join("; "));
  const auditProblem = built.record.audit ? auditDateProblem(built.record.audit.date, now()) : null;
  if (auditProblem) throw new ApiError(400, "ANCHOR_INVALID", auditProblem);
  const shards = built.record.ledger_shards ?? 1;
  requireShardKey(shards, ledgerShardKey(c.env));
  // An HMAC key shared with another organisation is no trust domain: Level 0 stays inside this one.
  if (built.record.shared_secret && built.record.org_id !== null && built.record.org_id !== (c.env.ORG_ID || null)) {
    throw new ApiError(400, "ANCHOR_INVALID", "shared_secret (Level 0) is pinned only for an issuer of this deployment's own organisation (org_id absent or ORG_ID)");
  }
  const secretName = built.record.shared_secret?.secret;
  if (secretName !== undefined) {
    // Named, not held: the name must be a Level 0 key this deployment has, never one of its other secrets.
    if (OWN_SECRETS.has(secretName)) throw new ApiError(400, "ANCHOR_INVALID", `shared_secret ${secretName} is one of this deployment's own secrets, not a Level 0 key`);
    if (!decodeSharedSecret((c.env as unknown as Record<string, string | undefined>)[secretName])) {
      throw new ApiError(400, "ANCHOR_INVALID", `shared_secret names ${secretName}, which this deployment does not hold as a Level 0 key (a secret of at least 32 bytes as lowercase hex)`);
    }
    // The other way round from registration's check: a key a relying party already holds as its
    // token (as written or in uppercase hex) would let that party make this issuer's Level 0 receipts.
    const value = (c.env as unknown as Record<string, string>)[secretName];
    const { relyingParties } = c.get("services");
    if ((await relyingParties.byToken(value)) || (await relyingParties.byToken(value.toUpperCase()))) {
      throw new ApiError(400, "ANCHOR_INVALID", `shared_secret names ${secretName}, whose key is a relying party's token; give the issuer a Level 0 key of its own`);
    }
  }
  const existing = await anchors.fresh(built.record.issuer);
  if (existing && (existing.ledger_shards ?? 1) !== shards) {
    throw new ApiError(409, "ANCHOR_SHARDS_IMMUTABLE", `ledger_shards is ${existing.ledger_shards ?? 1} for this issuer and cannot change: moving nonces between shards would open a replay window`);
  }
  const refuseRevoked = (reused: AnchorRecord["keys"]) => {
    if (reused.length === 0) return;
    const named = reused.map((k) => `${k.kid} (${k.fingerprint.slice(0, 16)})`).join(", ");
    throw new ApiError(409, "ANCHOR_KEY_REVOKED", `key ${named} was revoked; a revoked key cannot be pinned again under any kid`);
  };
  // The global records first: a pin they refuse addresses no ledger, so it creates none.
  const revokedAnywhere = await Promise.all(built.record.keys.map((k) => anchors.revokedKey(k.fingerprint)));
  refuseRevoked(built.record.keys.filter((_, i) => revokedAnywhere[i] !== null));
  const revokedHere = new Set((await ledgers.revocations(built.record.issuer, shards)).map((r) => r.fingerprint));
  refuseRevoked(built.record.keys.filter((k) => revokedHere.has(k.fingerprint)));
  // One key, one issuer: otherwise revoking it for one issuer would leave it trusted for another.
  const holders = await Promise.all(built.record.keys.map((k) => anchors.keyHolder(k.fingerprint)));
  const shared = built.record.keys.filter((_, i) => holders[i] !== null && holders[i]!.issuer !== built.record.issuer);
  if (shared.length > 0) {
    const named = shared.map((k) => `${k.kid} (${k.fingerprint.slice(0, 16)})`).join(", ");
    throw new ApiError(409, "ANCHOR_KEY_IN_USE", `key ${named} is pinned for another issuer; a key belongs to one issuer, so that revoking it revokes it everywhere`);
  }
  // The checks above answer early; the write is made by the admin registry, one pin at a time,
  // against the anchor as KV holds it then (its shards and key holders checked again there).
  const record = unwrap(await c.get("services").registry.pinAnchor(built.record, at));
  anchors.remember(record);
  return c.json({ issuer: record.issuer, keys: record.keys.map((k) => ({ kid: k.kid, fingerprint: k.fingerprint })) });
})
  /**
   * Revokes a key, current or ever pinned for the issuer, by fingerprint, in every ledger shard of
   * the issuer (the very next verification anywhere sees it), then records it globally so no
   * issuer can pin it again.
   */
  .post("/anchors/revoke", jsonBody(KeyCall), async (c) => {
  const { record, kid, fingerprint } = await keyCall(c, KeyCall);
  const { now, anchors, ledgers } = c.get("services");
  const key = await revocableKey(anchors, record, { kid, fingerprint });
  const revoked = await ledgers.revoke(record.issuer, record.ledger_shards ?? 1, key.fingerprint, key.kid, Math.floor(now()));
  forgetIssuerView(c.get("services").issuerViews, record.issuer);
  await anchors.putRevokedKey({ fingerprint: key.fingerprint, issuer: record.issuer, kid: key.kid, revoked_at: revoked.revoked_at });
  // This isolate's issuing routes see their own key's revocation at once, not after their check's TTL.
  forgetOwnKeyCheck(key.fingerprint);
  const in_flight = await revokeInFlight(c, record.issuer, record.ledger_shards ?? 1, key.fingerprint, revoked.revoked_at);
  // A manifest signed by a revoked key no longer says anything. The admin registry reads the anchor
  // again: the one read at the start of this call may have been replaced by a pin since.
  const dropped = await c.get("services").registry.dropManifestSignedBy(record.issuer, key.fingerprint);
  if (dropped) anchors.remember(dropped);
  return c.json({ issuer: record.issuer, kid: key.kid, fingerprint: key.fingerprint, revoked_at: revoked.revoked_at, in_flight });
})
  /**
   * What a key's revocation touched (CCS §14): the live chains that took a hop it signed, each with
   * the hop it is broken at, and the journal records in flight under it, marked for reconciliation.
   */
  .get("/revocations/:fingerprint", async (c) => {
  const fingerprint = c.req.param("fingerprint");
  if (!HEX64.test(fingerprint)) throw new ApiError(400, "MALFORMED_REQUEST", "fingerprint must be 64 lowercase hex (SHA-256 of the raw key)");
  const { anchors, journal } = c.get("services");
  const revocation = await anchors.revokedKey(fingerprint);
  if (!revocation) throw new ApiError(404, "NOT_FOUND", `no key with fingerprint ${fingerprint} has been revoked`);
  const shards = (await anchors.fresh(revocation.issuer))?.ledger_shards ?? 1;
  const timeout = dependencyTimeout(c.env);
  const ids = await chainsSignedBy(c, revocation.issuer, shards, fingerprint);
  const broken = await Promise.all(ids.map((id) => withTimeout(chainObject(c, id).brokenBy(fingerprint), timeout, "evidence chain")));
  const chains = ids.map((chain_id, i) => ({ chain_id, broken_at_hop: broken[i].broken_at_hop, seal_withdrawn: broken[i].broken_at_hop !== null }));
  return c.json({ ...revocation, chains, journal_records: await journal(INTAKE_TENANT).marksFor(fingerprint) });
})
  /**
   * Clears the sequence state of one current key in every shard (its window and the sequences
   * noted on its retained nonces; the nonces themselves stay claimed) and records the audit entry
   * {fingerprint, kid, at, reason, by: "admin", previous_highest}, shown by GET /v1/issuers/{issuer}.
   */
  .post("/anchors/reset-sequence", jsonBody(ResetCall), async (c) => {
  const { body, record, kid, fingerprint } = await keyCall(c, ResetCall);
  const reason = body.reason;
  // An audit entry says why: at least one letter, digit, punctuation mark or symbol, and no control
  // character (a reason of a NUL, or of a zero-width space, was recorded as if it said something),
  // bidirectional control (U+202E turned the entry's text around) or line or paragraph separator.
  if (typeof reason !== "string" || !/[\p{L}\p{N}\p{P}\p{S}]/u.test(reason) || /[\p{Cc}\p{Bidi_Control}\p{Zl}\p{Zp}]/u.test(reason) || reason.length > MAX_REASON_LENGTH) {
    throw new ApiError(400, "MALFORMED_REQUEST", `reason must be at most ${MAX_REASON_LENGTH} characters, hold a letter, digit, punctuation mark or symbol, and no control character (bidirectional controls and line or paragraph separators included)`);
  }
  const key = resolveKey(record.keys, { kid, fingerprint }, record, "current");
  const { now, ledgers } = c.get("services");
  const reset = await ledgers.resetSequence(record.issuer, record.ledger_shards ?? 1, { fingerprint: key.fingerprint, kid: key.kid, at: Math.floor(now()), reason, by: "admin" });
  forgetIssuerView(c.get("services").issuerViews, record.issuer);
  return c.json({ issuer: record.issuer, ...reset });
})
  /**
   * Decision counts of the last `minutes` (default 60, at most the 24 h retention) by issuer
   * (pinned ones; everything else is "unpinned") and code, plus this isolate's cache sizes.
   */
  .get("/stats", async (c) => {
  const text = strictQuery(c, STATS_QUERY).minutes;
  // Decimal digits only: Number() would also take "0x10", "1e3" and " 5".
  const minutes = text === undefined ? 60 : /^[0-9]{1,6}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(minutes) || minutes < 1) throw new ApiError(400, "MALFORMED_REQUEST", "minutes must be a positive integer of at most 6 decimal digits");
  const { anchors, decisions } = c.get("services");
  const stats = await readDecisionStats(c.env, minutes, dependencyTimeout(c.env));
  return c.json({ ...stats, isolate: { anchor_cache: anchors.cacheSize(), uri_memo: uriMemoSize(), decision_labels: decisions.labels() } });
})
  /**
   * Pins another verifier's signed manifest beside its anchor: refused when the issuer is not
   * pinned, when the signature does not verify under the pinned key the manifest names (a revoked
   * one counts as not pinned), when that key is not pinned, when the manifest has expired, or
   * when it was published before the manifest already pinned (409 MANIFEST_SUPERSEDED).
   * Configurations given with it bind their config_hash to the manifest they name.
   */
  .put("/manifests", async (c) => {
  const body = await readStrictJson(c, MAX_ADMIN_BODY);
  const id = pinnedVerifierId(body);
  // Every issuer is pinned as an https:// URI with a host of at most MAX_URI_BYTES: any other id is
  // out of form (as GET /v1/verifiers/{id}/manifest answers it), not an issuer to look up and report unpinned.
  if (id === null) throw new ApiError(400, "MANIFEST_INVALID", "manifest.verifier_id is required");
  if (!isHttpsUri(id)) throw new ApiError(400, "MANIFEST_INVALID", `manifest.verifier_id must be an https:// URI with a host, of at most ${MAX_URI_BYTES} UTF-8 bytes, without whitespace or control characters`);
  const { now, anchors, ledgers, verifier } = c.get("services");
  const record = await anchors.fresh(id);
  if (!record) throw new ApiError(404, "NOT_FOUND", `issuer ${id} is not pinned; pin its anchor first`);
  const revoked = new Set((await ledgers.revocations(record.issuer, record.ledger_shards ?? 1)).map((r) => r.fingerprint));
  const keys = pinnedIssuer(record).keys.filter((k) => !revoked.has(k.fingerprint));
  const at = now();
  const pin = await buildPinnedManifest(body, record, keys, { now: at, skew: freshnessPolicy(c.env).skewCap, verifier });
  if (pin.kind === "refused") throw new ApiError(pin.code === "MANIFEST_SUPERSEDED" ? 409 : 400, pin.code, pin.detail);
  // Written by the admin registry against the anchor as KV holds it then, one pin at a time.
  // The bindings answered are those written: the ones held then, with this pin's configurations.
  const written = unwrap(await c.get("services").registry.pinManifest(record.issuer, pin.pinned, pin.added));
  anchors.remember(written);
  const { document, manifest_hash, bindings } = written.manifest!;
  return c.json({ verifier_id: record.issuer, manifest_hash, profiles_digest: document.profiles_digest, expires_at: document.expires_at, bindings });
});
