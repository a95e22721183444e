/**
 * CCS 13.9, transport fallback: the typed client and the CLI never turn an unreachable verifier
 * into a pass. A refused connection (a closed port), a timeout, a 5xx and a redirect (never followed) are each a deny-shaped
 * answer, decision reject and action block, carrying VERIFIER_UNAVAILABLE; the honest path (a
 * verifier that answers) is the verifier's own answer.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countersignClient, gateEnvelope, gateVerify, type EnvelopeCall, type VerifyCall } from "../../worker/client.js";
import { main, type Io } from "../../cli/countersign.js";

const listen = (server: Server) => new Promise<number>((done) => server.listen(0, "127.0.0.1", () => done((server.address() as AddressInfo).port)));
const close = (server: Server) => new Promise<void>((done) => server.close(() => done()));

let closedPort: number;
let failing: Server;
let failingPort: number;
let silent: Server;
let silentPort: number;
let honest: Server;
let honestPort: number;
let honestCalls = 0;
let redirecting: Server;
let redirectingPort: number;

beforeAll(async () => {
  // A port that was just free and is closed again: nothing listens there.
  const probe = createServer();
  closedPort = await listen(probe);
  await close(probe);
  failing = createServer((_, res) => res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: { code: "VERIFIER_UNAVAILABLE", detail: "down" } })));
  failingPort = await listen(failing);
  silent = createServer(() => {});
  silentPort = await listen(silent);
  honest = createServer((_, res) => {
    honestCalls++;
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ valid: true, decision: "accept", failures: [], issuer: "https://issuer.example", keys: [] }));
  });
  honestPort = await listen(honest);
  // Redirects every call to the honest server: another origin, which answers accept to anything.
  redirecting = createServer((_, res) => res.writeHead(307, { location: `http://127.0.0.1:${honestPort}/v1/receipts/verify` }).end());
  redirectingPort = await listen(redirecting);
});

afterAll(async () => {
  silent.closeAllConnections();
  await Promise.all([close(failing), close(silent), close(honest), close(redirecting)]);
});

const CALL = { receipt: {}, audience: "https://relying-party.example", mode: "audit" } as unknown as VerifyCall;
const ENVELOPE = { envelope: {}, audience: "https://relying-party.example", mode: "audit" } as unknown as EnvelopeCall;
const denied = { valid: false, decision: "reject", enforcement: { action: "block" }, failures: [{ code: "VERIFIER_UNAVAILABLE", severity: "CRITICAL" }] };

describe("the typed client's gate calls", () => {
  it("a closed port is a reject with VERIFIER_UNAVAILABLE, for receipts and envelopes", async () => {
    const client = countersignClient(`http://127.0.0.1:${closedPort}`, { token: "t" });
    expect(await gateVerify(client, CALL)).toMatchObject({ ...denied, status: null });
    expect(await gateEnvelope(client, ENVELOPE)).toMatchObject({ ...denied, status: null });
  });

  it("a 5xx is a reject with VERIFIER_UNAVAILABLE, whatever its body says", async () => {
    expect(await gateVerify(countersignClient(`http://127.0.0.1:${failingPort}`), CALL)).toMatchObject({ ...denied, status: 503 });
  });

  it("a verifier that never answers is a reject once the timeout passes", async () => {
    // A verifier that never answers holds the call until the client's timeout: the test's own timeout
    // (5 s) is what fails without it, no timed assertion.
    expect(await gateVerify(countersignClient(`http://127.0.0.1:${silentPort}`, { timeoutMs: 200 }), CALL)).toMatchObject(denied);
  }, 5_000);

  it("a redirect is a reject with VERIFIER_UNAVAILABLE, and is not followed: the call's body goes to no other origin", async () => {
    const before = honestCalls;
    const client = countersignClient(`http://127.0.0.1:${redirectingPort}`, { token: "t" });
    expect(await gateVerify(client, CALL)).toMatchObject({ ...denied, status: 307 });
    expect(await gateEnvelope(client, ENVELOPE)).toMatchObject({ ...denied, status: 307 });
    expect(honestCalls).toBe(before);
  });

  it("refuses, before any call, to send a token over http:// to a host that is not loopback, as the CLI does; insecureHttp allows it", () => {
    // Review rv-98: the client sent a relying party's token in clear to any http:// host.
    for (const url of ["http://verifier.example", "http://10.0.0.7:8787", "http://[::2]:8787", "HTTP://VERIFIER.EXAMPLE/"]) {
      expect(() => countersignClient(url, { token: "t" }), url).toThrow(/not loopback: the token would cross the network in clear/);
      expect(() => countersignClient(url, { token: "t", insecureHttp: true }), url).not.toThrow();
      expect(() => countersignClient(url), url).not.toThrow(); // no token, nothing secret to send
    }
    for (const url of ["https://verifier.example", "http://localhost:8787", "http://127.0.0.1:8787", "http://2130706433:8787", "http://[::1]:8787"]) {
      expect(() => countersignClient(url, { token: "t" }), url).not.toThrow();
    }
  });

  it("the honest path: a verifier that answers is answered as it said", async () => {
    expect(await gateVerify(countersignClient(`http://127.0.0.1:${honestPort}`), CALL)).toMatchObject({ valid: true, decision: "accept", status: 200 });
  });
});

async function cli(...argv: string[]) {
  let out = "";
  let err = "";
  const io: Io = { out: (t) => void (out += t), err: (t) => void (err += t), read: () => "", env: {}, fetch };
  return { code: await main(argv, io), out, err };
}

describe("the CLI's remote commands", () => {
  it("against a closed port: exit 1 and a reject-shaped document with VERIFIER_UNAVAILABLE, never a pass", async () => {
    const res = await cli("anchors", "show", "https://issuer.example", "--url", `http://127.0.0.1:${closedPort}`, "--json");
    expect(res.code).toBe(1);
    expect(JSON.parse(res.out)).toMatchObject({ ...denied, status: null, error: { code: "VERIFIER_UNAVAILABLE" } });
    const revoke = await cli("anchors", "revoke", "--issuer", "https://issuer.example", "--kid", "k1", "--url", `http://127.0.0.1:${closedPort}`, "--json");
    expect(revoke.code).toBe(1);
    expect(JSON.parse(revoke.out).failures[0].code).toBe("VERIFIER_UNAVAILABLE");
  });

  it("a 5xx and a timeout are the same deny", async () => {
    const failed = await cli("relying-parties", "add", "p", "--audience", "https://relying-party.example", "--url", `http://127.0.0.1:${failingPort}`, "--json");
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.out)).toMatchObject({ ...denied, status: 503 });
    const timedOut = await cli("anchors", "show", "https://issuer.example", "--url", `http://127.0.0.1:${silentPort}`, "--timeout", "200", "--json");
    expect(timedOut.code).toBe(1);
    expect(JSON.parse(timedOut.out)).toMatchObject(denied);
  });

  it("the honest path: an answering instance's document, exit 0", async () => {
    const res = await cli("anchors", "show", "https://issuer.example", "--url", `http://127.0.0.1:${honestPort}`, "--json");
    expect(res.code).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ issuer: "https://issuer.example" });
  });
});
