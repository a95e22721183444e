/**
 * The status page as one self-contained HTML document: inline CSS (one <style> block, allowed
 * by its hash in the Content-Security-Policy), inline SVG charts (stacked bars per minute), no script, no remote load.
 * It shows only public or aggregated figures: pinned issuers and their public keys, decision
 * counts by code and by pinned issuer, nonce-cache sizes, the number of live chains. Every
 * string is escaped, whoever chose it.
 */
import { PALETTE, stackedBarChart, type Series } from "./chart.js";
import { escapeHtml as esc } from "./escape.js";

export interface StatusKey {
  kid: string;
  fingerprint: string;
  not_before: number | null;
  not_after: number | null;
  /** Null when the issuer's ledger could not be asked. */
  revoked: boolean | null;
}

export interface StatusIssuer {
  issuer: string;
  org_id: string | null;
  ledger_shards: number;
  keys: StatusKey[];
  /** Nonces held, summed over the shards; null when not counted (unavailable or past the shard budget). */
  nonces: number | null;
  /** CCS §9 class its anchor declares (C when none); absent when the anchor record was unavailable. */
  verifier_class?: "A" | "B" | "C";
  /** CCS 13.7: flagged for review (allow-only over the threshold); null when the counters did not answer. */
  review?: boolean | null;
}

/** This deployment's capability manifest as the page shows it. */
export interface StatusManifest {
  verifier_id: string;
  profiles: { id: string; comparison_scope: string }[];
  profiles_digest: string;
  manifest_hash: string;
  published_at: number;
  expires_at: number;
  challenge_policy: { base_duration: number; deadline_multiplier: number; max_deadline: number };
}

export interface StatusView {
  /** Unix seconds the page was made at. */
  generatedAt: number;
  /** This deployment's own issuer URI, when configured. */
  self: string | null;
  /** The pinned issuers listed, or null when the anchor store did not answer. */
  issuers: StatusIssuer[] | null;
  /** At most this many issuers are listed and asked for their nonces. */
  issuerLimit: number;
  /** More issuers are pinned than listed. */
  moreIssuers: boolean;
  /** CCS 13.7: issuers flagged for review that the list does not show (at most `issuerLimit` of them), and how many more there are. */
  flaggedUnlisted?: { issuers: string[]; more: number };
  /** At most this many ledger shards are asked per page. */
  shardBudget: number;
  /** Minute series of decisions, or null when DecisionStats did not answer. */
  series: { from: number; minutes: number; byCode: Record<string, number[]>; byLabel: Record<string, number[]>; labelsFolded: number } | null;
  /** Live chains started, or null when unknown. */
  liveChains: number | null;
  /** How many issuers the per-issuer chart draws before folding the rest. */
  labelLimit: number;
  /** How long an isolate reuses a rendered page, seconds. */
  refreshSeconds: number;
  /** This deployment's manifest; "none" when it signs nothing (no signing identity configured); "revoked" when its own signing key was revoked; null when it could not be built (a broken configuration). */
  manifest?: StatusManifest | "none" | "revoked" | null;
  /** Usage evidence summed over the relying parties asked (at most `usagePartyLimit`); null when the ledgers did not answer. Absent: not shown. */
  usage?: { receipts: number; attribution: Record<string, number>; estimates: Record<string, number>; reconciliation: Record<string, number>; parties: number; moreParties: boolean } | null;
  usagePartyLimit?: number;
}

/** What each counted label means; failure codes are documented in the README's code table. */
export const OUTCOME_LABELS: [string, string][] = [
  ["ACCEPTED", 'a valid receipt answered decision "accept" (verdict allow, enforce mode)'],
  ["DENIED", 'a valid receipt answered decision "reject": a genuine deny'],
  ["DEFERRED", 'a valid receipt answered decision "defer": a genuine escalate, or an allow whose outcome was reported indeterminate or unknown'],
];

/** The page's one style block; its SHA-256 is what the Content-Security-Policy allows. */
export const STATUS_STYLE = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:980px;padding:16px 24px;color:#1b1b1b;background:#fafafa}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
p.meta,p.note{color:#555;margin:4px 0}table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e4e4e4;vertical-align:top}th{background:#f0f0f0;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace}
.figure{background:#fff;border:1px solid #e4e4e4;padding:8px;margin:8px 0}.figure svg{display:block;width:100%;height:auto}
ul.legend{list-style:none;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 16px}
.sw{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-1px;border-radius:2px}
.revoked{color:#c62828;font-weight:600}.big{font-size:28px;font-weight:600}
${PALETTE.map((c, i) => `.c${i}{background:${c}}`).join("")}
`;

/** A pinned key's bound is any safe integer of seconds; one past what a Date can hold (year 275760) is shown as the number it is, never thrown on. */
const when = (t: number | null) => {
  if (t === null) return "—";
  const d = new Date(t * 1000);
  return Number.isNaN(d.getTime()) ? `${t} (Unix seconds)` : d.toISOString().replace(".000Z", "Z");
};
const count = (n: number | null) => (n === null ? "unavailable" : String(n));
const total = (points: number[]) => points.reduce((a, b) => a + b, 0);

function issuersSection(v: StatusView): string {
  if (v.issuers === null) return `<p class="note">The anchor store did not answer; pinned issuers are unavailable.</p>`;
  if (v.issuers.length === 0) return `<p class="note">No issuer is pinned yet (<code>PUT /v1/admin/anchors</code>).</p>`;
  const rows = v.issuers.flatMap((i) =>
    i.keys.length === 0 ? [`<tr><td><code>${esc(i.issuer)}</code></td><td colspan="6">anchor record unavailable</td></tr>`] : i.keys.map((k, n) => {
      const issuerCells = n === 0
        ? `<td rowspan="${i.keys.length}"><code>${esc(i.issuer)}</code>${i.issuer === v.self ? " (this deployment)" : ""}${i.org_id ? `<br><small>org ${esc(i.org_id)}</small>` : ""}${i.verifier_class ? `<br><small>Class ${i.verifier_class}</small>` : ""}${i.review ? `<br><span class="revoked">review required: allow-only</span>` : ""}</td>`
        : "";
      const nonceCell = n === 0 ? `<td class="num" rowspan="${i.keys.length}">${count(i.nonces)}${i.ledger_shards > 1 ? `<br><small>${i.ledger_shards} shards</small>` : ""}</td>` : "";
      const revoked = k.revoked === null ? "unknown" : k.revoked ? `<span class="revoked">revoked</span>` : "no";
      return `<tr>${issuerCells}<td><code>${esc(k.kid)}</code></td><td><code>${esc(k.fingerprint.slice(0, 16))}</code></td><td>${when(k.not_before)}</td><td>${when(k.not_after)}</td><td>${revoked}</td>${nonceCell}</tr>`;
    }),
  );
  const limits = `Listed: the first ${v.issuerLimit} pinned issuers (in key order)${v.moreIssuers ? " — more are pinned and not shown" : ""}. Nonces held are summed over each issuer's ledger shards, at most ${v.shardBudget} shards per page.`;
  const f = v.flaggedUnlisted;
  const unlisted = f && f.issuers.length > 0
    ? `<p class="note"><span class="revoked">review required: allow-only</span> (CCS 13.7), pinned and not in the table below: ${f.issuers.map((i) => `<code>${esc(i)}</code>`).join(", ")}${f.more > 0 ? ` and ${f.more} more` : ""}.</p>`
    : "";
  return `${unlisted}<table><thead><tr><th>issuer</th><th>kid</th><th>fingerprint (short)</th><th>not before</th><th>not after</th><th>revoked</th><th class="num">nonces held</th></tr></thead><tbody>${rows.join("")}</tbody></table><p class="note">${limits}</p>`;
}

function figure(title: string, from: number, series: Series[]): string {
  const legend = series.map((s, i) => `<li><span class="sw c${i % PALETTE.length}"></span><code>${esc(s.name)}</code> ${total(s.points)}</li>`).join("");
  return `<div class="figure">${stackedBarChart({ title, from, series })}<ul class="legend">${legend}</ul></div>`;
}

function decisionsSection(v: StatusView): string {
  const s = v.series;
  if (s === null) return `<p class="note">DecisionStats did not answer; decision counts are unavailable.</p>`;
  const codes = Object.entries(s.byCode).sort(([a], [b]) => (a < b ? -1 : 1));
  const labels = Object.entries(s.byLabel);
  const window = `the last ${s.minutes} minutes (enforce-mode decisions; each isolate sends its counts with its first decision once the oldest it holds is 10 s old (the default flush interval), so an isolate that has gone quiet sends its last counts with its next decision; a count is drawn under the minute it was counted in)`;
  if (codes.length === 0) return `<p class="note">No decision counted in ${window}.</p>`;
  const byCode = figure("Decisions by code", s.from, codes.map(([name, points]) => ({ name, points })));
  const byLabel = figure("Decisions by issuer", s.from, labels.map(([name, points]) => ({ name, points })));
  const folded = s.labelsFolded > 0 ? ` ${s.labelsFolded} less busy issuers are summed as one line.` : "";
  const legend = OUTCOME_LABELS.map(([label, meaning]) => `<tr><td><code>${label}</code></td><td>${esc(meaning)}</td></tr>`).join("");
  return `<p class="meta">Over ${window}.</p>
<h3>By code</h3>${byCode}
<table><thead><tr><th>label</th><th>meaning</th></tr></thead><tbody>${legend}<tr><td>any other</td><td>a failure code (a decision with several failures counts once under each)</td></tr></tbody></table>
<h3>By issuer</h3>${byLabel}
<p class="note">One decision counts once per issuer. Issuers are pinned ones; anything else counts as <code>unpinned</code>. At most ${v.labelLimit} issuers are drawn.${folded}</p>`;
}

function manifestSection(v: StatusView): string {
  const m = v.manifest;
  if (m === null) return `<p class="note">The capability manifest could not be built: <code>GET /.well-known/ccs-manifest</code> answers why (the configuration error, as <code>SERVICE_MISCONFIGURED</code>).</p>`;
  if (m === "revoked") return `<p class="note">No capability manifest: this deployment's signing key has been revoked, so it publishes none (<code>GET /.well-known/ccs-manifest</code> answers 503 <code>SIGNING_KEY_REVOKED</code>) until it is re-keyed.</p>`;
  if (!m || m === "none") return `<p class="note">No capability manifest: this deployment has no signing identity configured, so it publishes none.</p>`;
  const rows = m.profiles.map((p) => `<tr><td><code>${esc(p.id)}</code></td><td>${esc(p.comparison_scope)}</td></tr>`).join("");
  const c = m.challenge_policy;
  return `<p class="meta">Published at <code>GET /.well-known/ccs-manifest</code> for <code>${esc(m.verifier_id)}</code>, signed for ${when(m.published_at)} to ${when(m.expires_at)}.</p>
<table><thead><tr><th>profile</th><th>comparison scope</th></tr></thead><tbody>${rows || `<tr><td colspan="2">no profile declared</td></tr>`}</tbody></table>
<p class="note">profiles_digest <code>${esc(m.profiles_digest)}</code>; manifest_hash <code>${esc(m.manifest_hash)}</code> (in the canonical configuration). Challenge deadline: min(${c.base_duration} s × ${c.deadline_multiplier}, ${c.max_deadline} s) after the deny.</p>`;
}

const tally = (counts: Record<string, number>) =>
  Object.keys(counts).length === 0 ? "none" : Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `<code>${esc(k)}</code> ${n}`).join(", ");

/** Usage receipts by attribution, estimates by disposition, reconciliations by disposition: counts only, no party named. */
function usageSection(v: StatusView): string {
  const u = v.usage;
  if (u === undefined) return "";
  if (u === null) return `<h2>Usage and cost evidence</h2>\n<p class="note">Unavailable: the usage ledgers did not answer.</p>`;
  return `<h2>Usage and cost evidence</h2>
<table><tbody>
<tr><th>usage receipts</th><td class="num">${u.receipts}</td></tr>
<tr><th>by attribution</th><td>${tally(u.attribution)}</td></tr>
<tr><th>cost estimates</th><td>${tally(u.estimates)}</td></tr>
<tr><th>reconciliation</th><td>${tally(u.reconciliation)}</td></tr>
</tbody></table>
<p class="note">Summed over ${u.parties} relying parties${u.moreParties ? ` (the first ${v.usagePartyLimit} registered; more exist)` : ""}; <code>none</code> in reconciliation counts receipts not yet reconciled.</p>`;
}

export function renderStatusPage(v: StatusView): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="refresh" content="60"><title>countersign status</title><style>${STATUS_STYLE}</style></head>
<body>
<h1>countersign status</h1>
<p class="meta">Generated ${when(v.generatedAt)}${v.self ? ` by <code>${esc(v.self)}</code>` : ""}; reused for up to ${v.refreshSeconds} s. Public: aggregated counts and public keys only.</p>
<h2>Decisions</h2>
${decisionsSection(v)}
<h2>Pinned issuers and keys</h2>
${issuersSection(v)}
<h2>Live chains</h2>
<p><span class="big">${count(v.liveChains)}</span> live chains started (a chain counts once it holds hop 0).</p>
<h2>Capability manifest</h2>
${manifestSection(v)}
${usageSection(v)}
</body></html>
`;
}
