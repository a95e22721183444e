/**
 * The ToolReceiptJournal port over HTTP, for runtimes that drive their own lifecycle: reserve,
 * append, claim, verify-fence, load and load-by-idempotency. Each relying party has its own
 * journal (its token names the tenant), so no party reads or grows another's, and no caller
 * without a registered token can write at all. Every port result is answered 200 with its `kind`,
 * exactly as the port returns it (callers branch on `kind`, as the port's own callers do);
 * input the journal refuses is 400, a history that does not add up is 500 JOURNAL_HISTORY_INVALID.
 */
import { partyScope } from "../protocol/relying-parties.js";
import type { JournalEntry, JournalRecord } from "../protocol/journal/port.js";
import { Hono, type Context } from "hono";
import type { z } from "zod";
import type { AppEnv } from "../app.js";
import { leaseSeconds, MAX_VERIFY_BODY } from "../config.js";
import { AppendCall, ClaimCall, LoadByIdempotencyCall, LoadCall, ReserveCall, VerifyFenceCall } from "../contract/schemas.js";
import { ApiError, readStrictJson, validateBody } from "../http.js";
import { partyTenant } from "../journal-store.js";
import { exportToolExecution } from "../observability.js";

const port = (c: Context<AppEnv>) => c.get("services").journal(partyTenant(partyScope(c.get("relyingParty")))).port;

async function body<T extends z.ZodType>(c: Context<AppEnv>, schema: T): Promise<z.output<T>> {
  return validateBody(schema, await readStrictJson(c, MAX_VERIFY_BODY));
}

function reply(c: Context<AppEnv>, result: { kind: string; record_id?: string; reason?: string }) {
  if (result.kind === "corrupt") {
    console.error(JSON.stringify({ event: "journal_history_invalid", record_id: result.record_id, reason: result.reason }));
    throw new ApiError(500, "JOURNAL_HISTORY_INVALID", "the journal history of this record does not add up and was refused");
  }
  // A write that recorded a step is a tool execution event: projected and exported best-effort, after the answer is built.
  const written = result as { record?: JournalRecord; entries?: JournalEntry[] };
  if ((result.kind === "created" || result.kind === "appended" || result.kind === "claimed") && written.record) exportToolExecution(c, "relying_party", written.record, written.entries);
  return c.json(result);
}

const now = (c: Context<AppEnv>) => c.get("services").now();

export const journalRoutes = new Hono<AppEnv>()
  .post("/reserve", async (c) => reply(c, await port(c).reserve({ ...(await body(c, ReserveCall)), at: now(c) })))
  .post("/append", async (c) => reply(c, await port(c).append({ ...(await body(c, AppendCall)), at: now(c) })))
  .post("/claim", async (c) => {
  const call = await body(c, ClaimCall);
  return reply(c, await port(c).claim({ ...call, lease_seconds: call.lease_seconds ?? leaseSeconds(c.env), at: now(c) }));
})
  .post("/verify-fence", async (c) => reply(c, await port(c).verifyFence({ ...(await body(c, VerifyFenceCall)), at: now(c) })))
  .post("/load", async (c) => reply(c, await port(c).load((await body(c, LoadCall)).record_id)))
  .post("/load-by-idempotency", async (c) => reply(c, await port(c).loadByIdempotency((await body(c, LoadByIdempotencyCall)).idempotency_key)));
