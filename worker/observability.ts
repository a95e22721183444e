/**
 * Export of observability projections: scheduled once with `waitUntil` after the answer is built,
 * so it can neither delay nor change it. An exporter that throws or rejects is ignored, and
 * nothing is retried: the projection is a convenience, never evidence.
 */
import type { Context } from "hono";
import type { ProjectedAttributes } from "./protocol/observability.js";

export type Exporter = (attributes: ProjectedAttributes) => void | Promise<void>;

/** The default exporter: one JSON log line (Workers Logs keeps and indexes it). */
export const logLineExporter: Exporter = (attributes) => console.log(JSON.stringify(attributes));

/** Schedules one best-effort export of `attributes`; a request without an execution context exports nothing. */
export function exportBestEffort(c: Context, exporter: Exporter, attributes: ProjectedAttributes): void {
  let ctx: ExecutionContext;
  try {
    ctx = c.executionCtx;
  } catch {
    return;
  }
  ctx.waitUntil(
    Promise.resolve()
      .then(() => exporter(attributes))
      .catch(() => undefined),
  );
}
