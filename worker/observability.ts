/**
 * What an operator sees of each call: a request id on every answer (`X-Request-Id`), one JSON
 * log line per decision, and the batched counts behind the status page and `/v1/admin/stats`.
 * A log line carries the route, the issuer, the decision, its codes, the latency and the request
 * id; never a receipt body, a token, a key or a relying party's name.
 *
 * Observability projections are exported once with `waitUntil` after the answer is handed back, so they
 * can neither delay nor change it. An exporter that throws or rejects is ignored, and nothing is
 * retried: the projection is a convenience, never evidence.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app.js";
import { decisionCodes, UNPINNED, type MetricsBatch } from "./metrics.js";
import { projectToolExecutionEvent, toolExecutionEvent, type ExecutionJournal, type JournalStep, type ProjectedAttributes } from "./protocol/observability.js";
import type { JournalEntry, JournalRecord } from "./protocol/journal/port.js";
import type { Decision } from "./protocol/verify.js";
import type { Verdict } from "./protocol/receipt.js";
import { flushDecisions } from "./stores.js";
import { forgetIssuerView } from "./routes/issuers.js";

/** A `cf-ray` worth echoing: Cloudflare's form is hex, a dash and a colo; anything else gets a fresh id. */
const RAY = /^[0-9A-Za-z-]{1,64}$/;

/** Sets `requestId` (the `cf-ray` header when present, else a random UUID) and `startedAt`; answers it as `X-Request-Id`. */
export const requestContext: MiddlewareHandler<AppEnv> = async (c, next) => {
  const ray = c.req.header("cf-ray");
  c.set("requestId", ray !== undefined && RAY.test(ray) ? ray : crypto.randomUUID());
  c.set("startedAt", Date.now());
  await next();
  c.res.headers.set("X-Request-Id", c.get("requestId"));
};

/**
 * Hands a due batch to DecisionStats after the answer; its answer (the issuers flagged for review)
 * is what this isolate's decisions warn about until the next flush. A lost batch is logged, never
 * an error of the call.
 */
function flush(c: Context<AppEnv>, batch: MetricsBatch | null): void {
  if (!batch) return;
  const { decisions, reviewThreshold, issuerViews } = c.get("services");
  c.executionCtx.waitUntil(
    flushDecisions(c.env, batch, reviewThreshold)
      .then((flagged) => {
        decisions.learnReview(flagged);
        // The issuer views this isolate keeps re-read their review flag once its own counts are in.
        forgetIssuerView(issuerViews);
      })
      .catch((err) => console.error(JSON.stringify({ event: "counts_lost", error: String(err) }))),
  );
}

/**
 * Logs one decision as a JSON line and, in enforce mode, counts it in this isolate's batch
 * (under its issuer only when that issuer is pinned). The latency is wall time as the Workers
 * clock sees it: it advances on I/O (KV, Durable Objects), not during pure computation.
 */
export function observeDecision(c: Context<AppEnv>, decision: Decision, status: number): void {
  const { anchors, decisions, logLine } = c.get("services");
  const pinned = decision.issuer !== null && anchors.cachedPinned(decision.issuer);
  const codes = decisionCodes(decision);
  logLine(JSON.stringify({
    event: "decision",
    request_id: c.get("requestId"),
    route: c.req.path,
    mode: decision.mode,
    issuer: decision.issuer,
    issuer_pinned: pinned,
    decision: decision.decision,
    valid: decision.valid,
    codes,
    status,
    latency_ms: Date.now() - c.get("startedAt"),
  }));
  // A valid receipt's verdict is tallied for its pinned issuer (CCS 13.7), in the same batch, once per
  // receipt: by the call that consumed its nonce. An idempotent retry's answer and a Level 0 7-field
  // receipt (no nonce) can be had any number of times, so counting them would let one relying party
  // flag an issuer for review, and have it judged as Class C, for every other.
  const verdict = decision.valid && pinned && decision.nonce_consumed && !decision.idempotent_replay ? decision.enforcement.verdict : null;
  if (decision.mode === "enforce") flush(c, decisions.count(pinned ? decision.issuer! : UNPINNED, codes, verdict));
}

/** The default decision log sink: one line on the console (Workers Logs keeps and indexes it). */
export const writeLogLine = (line: string): void => console.log(line);

/**
 * Tallies the verdict of a receipt a live chain's append consumed (CCS 13.7: one per receipt, by
 * the call that consumed its nonce). An append is no decision: it is neither logged as one nor
 * counted on the status page's per-minute chart.
 */
export function countChainVerdict(c: Context<AppEnv>, issuer: string, verdict: Verdict): void {
  if (!c.get("services").anchors.cachedPinned(issuer)) return;
  flush(c, c.get("services").decisions.tally(issuer, verdict));
}

/** Counts a live chain that just took its hop 0 (batched like decisions). */
export function countChainStarted(c: Context<AppEnv>): void {
  flush(c, c.get("services").decisions.chainStarted());
}

export type Exporter = (attributes: ProjectedAttributes) => void | Promise<void>;

/** The default exporter: one JSON log line (Workers Logs keeps and indexes it). */
export const logLineExporter: Exporter = (attributes) => console.log(JSON.stringify(attributes));

/**
 * Schedules one best-effort export of `attributes`, after the response: the exporter runs on a
 * timer, so not before the answer is handed back (a microtask queued here ran ahead of it, and
 * the exporter's own time was spent before the response left). A request without an execution
 * context exports nothing.
 */
export function exportBestEffort(c: Context, exporter: Exporter, attributes: ProjectedAttributes): void {
  let ctx: ExecutionContext;
  try {
    ctx = c.executionCtx;
  } catch {
    return;
  }
  ctx.waitUntil(
    new Promise<void>((resolve) => setTimeout(resolve, 0))
      .then(() => exporter(attributes))
      .catch(() => undefined),
  );
}

/**
 * Exports the tool execution events of a journal write, each projected (projectToolExecutionEvent)
 * and scheduled once like any projection: one per entry the write appended, or, for a write that
 * answers the record alone (a reservation, a claim), the step the record now stands at. `journal`
 * says whose journal it is: this deployment's own (`intake`) or a relying party's.
 */
export function exportToolExecution(c: Context<AppEnv>, journal: ExecutionJournal, record: JournalRecord, entries?: readonly JournalEntry[]): void {
  const steps: readonly JournalStep[] = entries ?? [{ revision: record.revision, to: record.state, effect: record.effect, at: record.updated_at }];
  for (const step of steps) exportBestEffort(c, c.get("services").exporter, projectToolExecutionEvent(toolExecutionEvent(record, step, journal)));
}
