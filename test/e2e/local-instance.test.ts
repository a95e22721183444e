/**
 * End to end, as a user would: start the service with wrangler dev on a free loopback port,
 * pin an anchor over HTTP, verify, replay, restart on the same persisted state, replay again.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startLocalServer, type LocalServer } from "../../scripts/local-server.js";
import { countersignClient, gateVerify, type VerifyCall } from "../../worker/client.js";
import { toHex } from "../../worker/protocol/encoding.js";
import { anchorFor, identity, makeReceipt } from "../../vectors/ccs/factory.js";
import { buildAnchorRecord, pinnedIssuer } from "../../worker/protocol/anchors.js";
import { nobleVerifier } from "../../worker/protocol/ed25519.js";
import { verifyManifest } from "../../worker/protocol/manifest/manifest.js";

const TOKEN = "e2e-admin-token";
const RP_TOKEN = "e2e-relying-party-token-0123456789abcdef";
const AUDIENCE = "https://relying-party.example";
const persistTo = mkdtempSync(join(tmpdir(), "countersign-e2e-"));
const INTAKE_TOKEN = "e2e-intake-token";
const IDENTITY = {
  SIGNING_KEY: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
  SIGNING_KID: "e2e-own-1",
  LEGACY_HMAC_KEY: "03".repeat(32),
  INTAKE_TOKEN,
};
const start = () => startLocalServer({ persistTo, vars: { ADMIN_TOKEN: TOKEN, ...IDENTITY } });
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

  it("accepts a fresh receipt once and rejects its replay, through the typed client", async () => {
    const api = countersignClient(server.url, { token: RP_TOKEN });
    const first = await api.v1.receipts.verify.$post({ json: call as VerifyCall });
    expect(first.status).toBe(200);
    const answer = await first.json();
    expect(answer).toMatchObject({ valid: true, decision: "accept", nonce_consumed: true, enforcement: { action: "proceed_pending_reconciliation" } });
    const replay = await gateVerify(api, call as VerifyCall);
    expect(replay.failures.map((f) => f.code)).toEqual(["REPLAY_DETECTED"]);
    const health = await (await countersignClient(server.url).healthz.$get()).json();
    expect(health.ok).toBe(true);
  });

  it("the typed client never turns an unreachable verifier into a pass", async () => {
    const closed = countersignClient(`http://127.0.0.1:${await freePort()}`, { token: RP_TOKEN, timeoutMs: 2_000 });
    const answer = await gateVerify(closed, call as VerifyCall);
    expect(answer).toMatchObject({ valid: false, decision: "reject", status: null });
    expect(answer.failures.map((f) => f.code)).toEqual(["VERIFIER_UNAVAILABLE"]);
  });

  it("serves a capability manifest that verifies, with pure code, under the key its /.well-known/ccs-issuer publishes", async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/ccs-issuer`)).json()) as { issuer: string };
    const res = await fetch(`${server.url}/.well-known/ccs-manifest`);
    expect(res.status).toBe(200);
    const manifest = (await res.json()) as { verifier_id: string };
    const built = await buildAnchorRecord(doc, Math.floor(Date.now() / 1000));
    if (built.kind !== "built") throw new Error(built.errors.join("; "));
    const check = await verifyManifest(manifest, { keys: pinnedIssuer(built.record).keys, now: Date.now() / 1000, skew: 30, verifier: nobleVerifier });
    expect(check).toMatchObject({ ok: true, kid: IDENTITY.SIGNING_KID });
    expect(manifest.verifier_id).toBe(doc.issuer);
    const etag = res.headers.get("etag")!;
    expect((await fetch(`${server.url}/.well-known/ccs-manifest`, { headers: { "if-none-match": etag } })).status).toBe(304);
    const config = (await (await fetch(`${server.url}/v1/config`)).json()) as { config: { manifest_hash: string } };
    expect(config.config.manifest_hash).toBe(check.ok ? check.manifestHash : null);
  });

  const intake = (traceId: string) =>
    post("/v1/intake", { intake_version: "1.3", agent_id: "e2e-agent", tool: "search_web", params: { query: "weather in Tokyo" }, timestamp: Math.floor(Date.now() / 1000), trace_id: traceId }, "POST", INTAKE_TOKEN);
  let lastSequence = 0;

  it("issues through intake, and the receipt verifies once this instance's own key is pinned", async () => {
    const issued = await intake("e2e0000000000001");
    expect(issued.status).toBe(200);
    lastSequence = issued.body.receipt.sequence;
    const doc = await (await fetch(`${server.url}/.well-known/ccs-issuer`)).json();
    expect((await post("/v1/admin/anchors", doc, "PUT", TOKEN)).status).toBe(200);
    const audit = await post("/v1/receipts/verify", { receipt: issued.body.receipt, audience: AUDIENCE, mode: "audit" }, "POST", RP_TOKEN);
    expect(audit.body).toMatchObject({ valid: true, decision: "audit" });
  });

  it("a streamed body refused 413 leaves the instance answering the next call normally", async () => {
    // As curl sends it: a chunked upload (no Content-Length), the whole body sent, then the answer read.
    const chunked = async (path: string, size: number) => {
      const piece = new TextEncoder().encode("a".repeat(64 * 1024));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(new TextEncoder().encode('{"bundle":"'));
          if (sent < size) {
            controller.enqueue(piece);
            sent += piece.length;
          } else {
            controller.enqueue(new TextEncoder().encode('"}'));
            controller.close();
          }
        },
      });
      const res = await fetch(server.url + path, { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit);
      await res.arrayBuffer();
      return res.status;
    };
    for (let i = 0; i < 2; i++) {
      // 3 MiB, and 8 MiB: past the 2 MiB cap plus the 4 MiB a first version read out before it
      // cancelled, which broke the next call again.
      expect(await chunked("/v1/bundles/replay", (i === 0 ? 3 : 8) * 1024 * 1024)).toBe(413);
      const next = await post("/v1/ec/receipts/verify", {});
      expect(next.status).toBe(400);
      expect(next.body.error.code).toBe("MALFORMED_REQUEST");
    }
  });

  it("still rejects the replay after a restart on the same persisted state", async () => {
    await server.stop();
    server = await start();
    const replay = await post("/v1/receipts/verify", call, "POST", RP_TOKEN);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ valid: false, nonce_consumed: false });
    expect(replay.body.failures.map((f: { code: string }) => f.code)).toEqual(["REPLAY_DETECTED"]);
  });

  it("continues the issuing sequence after the restart, never repeating it", async () => {
    const issued = await intake("e2e0000000000002");
    expect(issued.status).toBe(200);
    expect(issued.body.receipt.sequence).toBe(lastSequence + 1);
  });
});
