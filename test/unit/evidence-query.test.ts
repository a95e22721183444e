/**
 * GET /v1/evidence reads its time bounds as decimal Unix seconds, as it reads limit, and each
 * parameter once: Number() took "0x10" as 16 and "1e3" as 1000, and a repeated parameter was
 * read as its first value, silently.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { nodeEnv } from "../../cli/offline-env.js";
import { INTAKE_TENANT, journalClient, durableJournalStub } from "../../worker/journal-store.js";

const NOW = 1_796_000_000;
const { env, ledgerStub, ctx } = nodeEnv({ ORG_ID: "https://relying-org.example", AUDIENCES: "https://relying-party.example" });
const app = createApp({ now: () => NOW, verifier: nobleVerifier, ledgerStub });
const ADMIN = { authorization: "Bearer test-admin-token" };

async function query(q: string) {
  const res = await app.request(`/v1/evidence?${q}`, { headers: ADMIN }, env, ctx);
  return { status: res.status, body: (await res.json()) as any };
}

describe("GET /v1/evidence's query", () => {
  it("refuses time bounds that are not decimal seconds, and a repeated parameter", async () => {
    for (const bad of ["from=0x10", "from=0b1", "from=0o7", "from=1e3", "to=1E3", "from=%2010", "from=10%20", "from=+5", "from=-1", "from=.5", "from=5.", "from=", "to=1" + "0".repeat(20), "from=1.0000001", "limit=2&limit=300", "from=1&from=2", "agent_id=a&agent_id=b", "agent_id=%ff", "agent_id=%", "tool=%E0%A4%A", "agent_id=%ZZ"]) {
      const r = await query(bad);
      expect([r.status, r.body.error?.code], bad).toEqual([400, "MALFORMED_REQUEST"]);
    }
  });

  it("reads decimal seconds, integral or not, as before", async () => {
    const port = journalClient(durableJournalStub(env), INTAKE_TENANT, 1, 30_000).port;
    await port.reserve({ idempotency_key: "00000000000000e1", action_digest: "d", at: NOW - 10, attributes: { trace_id: "00000000000000e1", agent_id: "query-agent", tool: "t" } });
    for (const [q, n] of [["tool=t", 1], ["tool=%74", 1], ["tool=t+", 0], [`from=${NOW - 11}`, 1], [`from=${NOW - 10}.5`, 0], [`to=${NOW - 10}`, 1], [`to=${NOW - 11}.999999`, 0], ["from=0&to=0", 0]] as const) {
      const r = await query(`agent_id=query-agent&${q}`);
      expect([r.status, r.body.records?.length], q).toEqual([200, n]);
    }
  });
});
