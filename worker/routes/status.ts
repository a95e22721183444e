/**
 * `GET /`: the status page. Public on purpose: it shows only what is public already (pinned
 * issuers and their public keys, as `GET /v1/issuers/...` does) and aggregated counts whose rows
 * are bounded by what an admin pinned or registered (decision counts by code and pinned issuer,
 * nonces held, live chains started, usage evidence summed over relying parties), and this
 * deployment's manifest. No token, audience or receipt content is read; relying-party names are
 * read only to address their usage ledgers and are never shown.
 * The work per view is bounded (STATUS_ISSUER_LIMIT issuers, STATUS_SHARD_BUDGET ledger shards)
 * and an isolate reuses a rendered page for STATUS_REUSE_SECONDS, so calling it often costs little.
 */
import { partyScope } from "../protocol/relying-parties.js";
import { Hono, type Context } from "hono";
import type { AppEnv } from "../app.js";
import { dependencyTimeout } from "../config.js";
import { sha256 } from "../protocol/digest.js";
import { readStatusFigures } from "../stores.js";
import { readUsageCounts } from "../usage-store.js";
import { DEFAULT_VERIFIER_CLASS } from "../protocol/conformance/verifier-class.js";
import { publishedIssuing } from "../manifest-store.js";
import { ownKeyRevoked } from "../own-key.js";
import { renderStatusPage, STATUS_STYLE, type StatusIssuer, type StatusManifest, type StatusView } from "../status-page/render.js";

export const STATUS_ISSUER_LIMIT = 50;
export const STATUS_SHARD_BUDGET = 200;
export const STATUS_MINUTES = 60;
export const STATUS_LABELS = 8;
export const STATUS_REUSE_SECONDS = 10;

/**
 * An isolate's last rendered page; `at` is when its render was started. A request that finds it
 * stale claims the next render by moving `at` forward before it starts, so the requests that
 * arrive while that render runs are answered the last page instead of each rendering one.
 */
export interface StatusPageCache {
  entry: { at: number; html: string } | null;
}

let styleHash: Promise<string> | undefined;

/** Nothing may load from anywhere; the one style block is allowed by its hash; no script at all. */
async function contentSecurityPolicy(): Promise<string> {
  styleHash ??= sha256(STATUS_STYLE).then((digest) => btoa(String.fromCharCode(...digest)));
  return `default-src 'none'; style-src 'sha256-${await styleHash}'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
}

const partial = (section: string) => (err: unknown) => {
  console.error(JSON.stringify({ event: "status_page_partial", section, error: String(err) }));
  return null;
};

/** The first issuers with their keys, revocations and nonces held, within the shard budget. */
async function pinnedIssuers(c: Context<AppEnv>): Promise<{ issuers: StatusIssuer[]; complete: boolean }> {
  const { anchors, ledgers } = c.get("services");
  const listed = await anchors.listPinned(STATUS_ISSUER_LIMIT);
  const records = await Promise.all(listed.issuers.map((issuer) => anchors.get(issuer).catch(partial(`anchor ${issuer}`))));
  let budget = STATUS_SHARD_BUDGET;
  const issuers = await Promise.all(
    listed.issuers.map(async (issuer, i): Promise<StatusIssuer> => {
      const record = records[i];
      if (!record) return { issuer, org_id: null, ledger_shards: 1, keys: [], nonces: null };
      const shards = record.ledger_shards ?? 1;
      const counted = shards <= budget;
      if (counted) budget -= shards;
      const state = counted
        ? await ledgers.stats(issuer, shards).catch(partial(`ledger ${issuer}`))
        : await ledgers.revocations(issuer, shards).then((revoked) => ({ revoked, nonces: null })).catch(partial(`ledger ${issuer}`));
      const revoked = state ? new Set(state.revoked.map((r) => r.fingerprint)) : null;
      return {
        issuer,
        org_id: record.org_id,
        ledger_shards: shards,
        keys: record.keys.map((k) => ({ kid: k.kid, fingerprint: k.fingerprint, not_before: k.not_before, not_after: k.not_after, revoked: revoked ? revoked.has(k.fingerprint) : null })),
        nonces: state?.nonces ?? null,
        verifier_class: record.verifier_class ?? DEFAULT_VERIFIER_CLASS,
      };
    }),
  );
  return { issuers, complete: listed.complete };
}

/**
 * This deployment's manifest as signed now, "none" when it has no signing identity, or "revoked"
 * when its own signing key was revoked (`/.well-known/ccs-manifest` then answers 503
 * SIGNING_KEY_REVOKED, so the page shows none either); a broken configuration throws.
 */
async function ownManifest(c: Context<AppEnv>): Promise<StatusManifest | "none" | "revoked"> {
  const own = await publishedIssuing(c.env);
  if (!own) return "none";
  // A failed read of the revocation record is not a broken configuration (which a null section
  // says): the page then shows the manifest, as it did before it asked.
  if (await ownKeyRevoked(c, own).catch((err) => (partial("own key revocation")(err), false))) return "revoked";
  const { manifest } = await own.manifest.signed(c.get("services").now());
  const { verifier_id, profiles, profiles_digest, published_at, expires_at, challenge_policy } = manifest;
  return { verifier_id, profiles, profiles_digest, manifest_hash: own.manifest.hash, published_at, expires_at, challenge_policy };
}

async function statusView(c: Context<AppEnv>): Promise<StatusView> {
  const [listed, figures, manifest, usage] = await Promise.all([
    pinnedIssuers(c).catch(partial("anchors")),
    readStatusFigures(c.env, STATUS_MINUTES, STATUS_LABELS, dependencyTimeout(c.env), c.get("services").reviewThreshold).catch(partial("decision stats")),
    ownManifest(c).catch(partial("manifest")),
    usageFigures(c).catch(partial("usage ledgers")),
  ]);
  // CCS 13.7: the flag each issuer carries, from the same counters; unknown when they did not answer.
  const review = figures ? new Set(figures.review) : null;
  if (listed) for (const i of listed.issuers) i.review = review ? review.has(i.issuer) : null;
  // A flagged issuer past the listed ones is named too: the flag is on the page whatever the list shows.
  const shown = new Set(listed?.issuers.map((i) => i.issuer));
  const unlisted = figures && listed ? figures.review.filter((i) => !shown.has(i)) : [];
  return {
    generatedAt: Math.floor(Date.now() / 1000),
    self: c.env.ISSUER || null,
    issuers: listed?.issuers ?? null,
    issuerLimit: STATUS_ISSUER_LIMIT,
    moreIssuers: listed ? !listed.complete : false,
    flaggedUnlisted: { issuers: unlisted.slice(0, STATUS_ISSUER_LIMIT), more: Math.max(0, unlisted.length - STATUS_ISSUER_LIMIT) },
    shardBudget: STATUS_SHARD_BUDGET,
    series: figures ? { ...figures.series, minutes: STATUS_MINUTES } : null,
    liveChains: figures?.chainsStarted ?? null,
    labelLimit: STATUS_LABELS,
    refreshSeconds: STATUS_REUSE_SECONDS,
    manifest,
    usage,
    usagePartyLimit: STATUS_PARTY_LIMIT,
  };
}

/** At most this many relying parties' usage ledgers are asked per page. */
const STATUS_PARTY_LIMIT = 50;

/** Usage evidence counts summed over the first STATUS_PARTY_LIMIT relying parties (no name is shown). */
async function usageFigures(c: Context<AppEnv>) {
  const { parties, cursor } = await c.get("services").relyingParties.list({ limit: STATUS_PARTY_LIMIT });
  const asked = parties.map(partyScope);
  const counts = await readUsageCounts(c.env, asked, dependencyTimeout(c.env));
  return { ...counts, parties: asked.length, moreParties: cursor !== null };
}

export const statusRoutes = new Hono<AppEnv>()
  .get("/", async (c) => {
  const cache = c.get("services").statusPage;
  const now = Date.now();
  let html: string;
  if (cache.entry && now - cache.entry.at < STATUS_REUSE_SECONDS * 1000) html = cache.entry.html;
  else {
    // Claimed before the reads start: at most one render per isolate per STATUS_REUSE_SECONDS,
    // however many callers arrive while it runs (each would ask every ledger shard and usage ledger).
    const claimed = cache.entry;
    if (claimed) claimed.at = now;
    html = renderStatusPage(await statusView(c));
    cache.entry = { at: now, html };
  }
  c.header("Content-Security-Policy", await contentSecurityPolicy());
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", `public, max-age=${STATUS_REUSE_SECONDS}`);
  return c.html(html);
});
