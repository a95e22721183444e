/**
 * Other verifiers' manifests and profile routing: `GET /v1/verifiers/{id}/manifest` (public, as
 * pinned anchors are) and `POST /v1/profiles/resolve` (relying-party token). Pinning is an admin
 * route (worker/routes/admin.ts).
 */
import { Hono, type Context } from "hono";
import { tryDecodeURIComponent } from "hono/utils/url";
import type { AppEnv } from "../app.js";
import { freshnessPolicy, MAX_ADMIN_BODY } from "../config.js";
import { ResolveCall } from "../contract/schemas.js";
import { ApiError, percentDecodes, readStrictJson, validateBody } from "../http.js";
import { publishedIssuing } from "../manifest-store.js";
import { ownKeyRevoked, refuseIfOwnKeyRevoked } from "../own-key.js";
import { issuerProblem } from "../protocol/anchors.js";
import { keyValidNow, manifestCurrent } from "../protocol/manifest/manifest.js";
import { manifestKeyValidUntil } from "../protocol/manifest/pinning.js";
import { resolveProfile, type Candidate } from "../protocol/manifest/resolve.js";
import { isHttpsUri } from "../protocol/receipt.js";

/** Most pinned verifiers one resolve reads (KV list order); a larger set is reported as `complete: false`. */
export const RESOLVE_VERIFIER_LIMIT = 100;

const VERIFIERS = "/verifiers/";
const MANIFEST = "/manifest";

/**
 * The verifier id of a `…/verifiers/{id}/manifest` path as the router reads paths (undecoded), or
 * null when the path is no such route: what the pattern `/verifiers/:verifier_id{.+}/manifest`
 * gave. That pattern is not given to the router: Hono's trie router (the one this app's routes
 * select) queues a node per slash its `.+` spans and shifts that queue once a segment, so a 16 KB
 * path of slashes ending `/manifest` cost 5 s of CPU before any handler ran.
 */
export function verifierIdOfPath(path: string): string | null {
  const at = path.indexOf(VERIFIERS);
  if (at < 0 || !path.endsWith(MANIFEST)) return null;
  const id = path.slice(at + VERIFIERS.length, path.length - MANIFEST.length);
  // The pattern's `.` matched no line terminator, so an id holding one (a decoded %0A) named no route.
  return id === "" || at + VERIFIERS.length > path.length - MANIFEST.length || /[\n\r\u2028\u2029]/.test(id) ? null : id;
}

/** The verifier id a path names, decoded once (as an issuer's, `issuerOf`): 400 when it cannot be one, before any read. */
function verifierOf(c: Context<AppEnv>, raw: string): string {
  if (!percentDecodes(c)) throw new ApiError(400, "MALFORMED_REQUEST", "the verifier id in the path is not valid percent-encoded UTF-8");
  const id = tryDecodeURIComponent(raw);
  const problem = issuerProblem(id);
  if (problem) throw new ApiError(400, "MALFORMED_REQUEST", problem.replace("issuer", "verifier id"));
  // Verifier ids are issuers, pinned (and configured) only as https:// URIs: any other is no id at all.
  if (!isHttpsUri(id)) throw new ApiError(400, "MALFORMED_REQUEST", "the verifier id must be an https:// URI with a host");
  return id;
}

export const manifestRoutes = new Hono<AppEnv>()
  /** A verifier's manifest: this deployment's own (signed now), or a pinned one with its configuration bindings. */
  .get("/verifiers/*", async (c) => {
  const raw = verifierIdOfPath(c.req.path);
  if (raw === null) return c.notFound();
  const id = verifierOf(c, raw);
  const { now, anchors } = c.get("services");
  const at = now();
  const own = await publishedIssuing(c.env);
  if (own && id === own.identity.issuer) {
    await refuseIfOwnKeyRevoked(c, own);
    const { manifest } = await own.manifest.signed(at);
    return c.json({ verifier_id: id, here: true, current: true, manifest, manifest_hash: own.manifest.hash });
  }
  const record = await anchors.get(id);
  const pinned = record?.manifest;
  if (!record || !pinned) throw new ApiError(404, "NOT_FOUND", `no manifest is pinned for ${id}`);
  return c.json({
    verifier_id: id,
    here: false,
    // Inside its window, and signed by a key still valid now (not_after, as a receipt's key is judged).
    current: manifestCurrent(pinned.document, at, freshnessPolicy(c.env).skewCap) && keyValidNow(manifestKeyValidUntil(record), at),
    manifest: pinned.document,
    manifest_hash: pinned.manifest_hash,
    pinned_at: pinned.pinned_at,
    bindings: pinned.bindings,
  });
})
  /** Which verifier of this deployment's set evaluates a profile: HELD, UNDECIDED (with its reason) or SET_EXHAUSTED; never a verdict. */
  .post("/profiles/resolve", async (c) => {
  const body = validateBody(ResolveCall, await readStrictJson(c, MAX_ADMIN_BODY));
  const { now, anchors } = c.get("services");
  const at = now();
  const own = await publishedIssuing(c.env);
  // A deployment whose own key is revoked publishes no manifest, so it holds no profile until re-keyed.
  const published = own && !(await ownKeyRevoked(c, own)) ? own : null;
  const self: Candidate = published ? { verifier_id: published.identity.issuer, manifest: (await published.manifest.signed(at)).manifest } : { verifier_id: own?.identity.issuer ?? c.env.ISSUER ?? "", manifest: null };
  const listed = await anchors.listPinned(RESOLVE_VERIFIER_LIMIT);
  const records = await Promise.all(listed.issuers.map((issuer) => anchors.get(issuer)));
  const pinned: Candidate[] = records.flatMap((r) => (r?.manifest ? [{ verifier_id: r.issuer, manifest: r.manifest.document, key_valid_until: manifestKeyValidUntil(r) }] : []));
  const resolution = resolveProfile({ profile: body.profile, exclude: body.exclude ?? [], self, pinned, now: at, skew: freshnessPolicy(c.env).skewCap });
  return c.json({ ...resolution, complete: listed.complete });
});
