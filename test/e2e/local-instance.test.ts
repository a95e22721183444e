/**
 * End to end, as a user would: start the service with wrangler dev on a free loopback port,
 * pin an anchor over HTTP, verify, replay, restart on the same persisted state, replay again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalServer, type LocalServer } from "../../scripts/local-server.js";
import { toHex } from "../../worker/protocol/encoding.js";
import { anchorFor, identity, makeReceipt } from "../../vectors/ccs/factory.js";

const TOKEN = "e2e-admin-token";
const RP_TOKEN = "e2e-relying-party-token-0123456789abcdef";
const AUDIENCE = "https://relying-party.example";
const persistTo = mkdtempSync(join(tmpdir(), "countersign-e2e-"));
const start = () => startLocalServer({ persistTo, vars: { ADMIN_TOKEN: TOKEN } });
let server: LocalServer;

const post = async (path: string, body: unknown, method = "POST", token?: string) => {
  const res = await fetch(server.url + path, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

describe("a locally started instance", () => {
  const label = `e2e-${toHex(crypto.getRandomValues(new Uint8Array(8)))}`;
  let call: Record<string, unknown>;

  beforeAll(async () => {
    server = await start();
    const id = await identity(label, "https://e2e-issuer.example", "e2e-1");
    const pinned = await post("/v1/admin/anchors", anchorFor(id), "PUT", TOKEN);
    expect(pinned.status).toBe(200);
    const party = await post("/v1/admin/relying-parties", { name: "e2e-party", audiences: [AUDIENCE], token: RP_TOKEN }, "POST", TOKEN);
    expect(party.status).toBe(201);
    const now = Math.floor(Date.now() / 1000);
    const { receipt, request } = await makeReceipt(id, { label, audience: AUDIENCE, issuedAt: now, sequence: now, lifetime: 300 });
    call = { receipt, audience: AUDIENCE, request };
  });

  afterAll(async () => {
    await server?.stop();
    rmSync(persistTo, { recursive: true, force: true });
  });

  it("answers /healthz and refuses admin calls without the token", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await post("/v1/admin/anchors", {}, "PUT")).status).toBe(401);
  });

  it("accepts a fresh receipt once and rejects its replay", async () => {
    const first = await post("/v1/receipts/verify", call, "POST", RP_TOKEN);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true, enforcement: { action: "proceed_pending_reconciliation" } });
    const replay = await post("/v1/receipts/verify", call, "POST", RP_TOKEN);
    expect(replay.body.failures.map((f: { code: string }) => f.code)).toEqual(["REPLAY_DETECTED"]);
  });

  it("still rejects the replay after a restart on the same persisted state", async () => {
    await server.stop();
    server = await start();
    const replay = await post("/v1/receipts/verify", call, "POST", RP_TOKEN);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ valid: false, nonce_consumed: false });
    expect(replay.body.failures.map((f: { code: string }) => f.code)).toEqual(["REPLAY_DETECTED"]);
  });
});
