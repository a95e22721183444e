/**
 * A typed client of the service: Hono's `hc` over the app's own route types, so a call's path,
 * body and answer are checked by the compiler against the routes themselves. Plus the one call a
 * gate needs, which never turns an unreachable verifier into a pass: a transport error, a
 * timeout, a 5xx or a redirect (none is followed) is a reject-shaped answer carrying
 * VERIFIER_UNAVAILABLE.
 */
import { hc } from "hono/client";
import type { AppType } from "./app.js";

export interface ClientOptions {
  /** A relying party's token (or the admin/intake token for those routes). */
  token?: string;
  fetch?: typeof fetch;
  /** Milliseconds before a call is abandoned; default 5000. */
  timeoutMs?: number;
  /** Send the token over http:// to a host that is not loopback (as the CLI's --insecure-http). */
  insecureHttp?: boolean;
}

/**
 * A host an http:// call may reach without crossing a network: `localhost`, 127.0.0.0/8 (the URL
 * parser has already written `2130706433` or `0x7f.1` as a dotted quad) and `[::1]`.
 */
export const isLoopbackHost = (hostname: string): boolean => hostname === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) || hostname === "[::1]";

/**
 * A client of the service at `baseUrl`. Throws (a TypeError, before any call) when a token would
 * go over http:// to a host that is not loopback, as the CLI refuses it, unless `insecureHttp`.
 */
export function countersignClient(baseUrl: string, options: ClientOptions = {}) {
  if (options.token && !options.insecureHttp) {
    const { protocol, hostname } = new URL(baseUrl);
    if (protocol === "http:" && !isLoopbackHost(hostname)) {
      throw new TypeError(`${baseUrl} is http:// to ${hostname}, not loopback: the token would cross the network in clear; use https://, or pass insecureHttp: true`);
    }
  }
  const timeoutMs = options.timeoutMs ?? 5_000;
  const base = options.fetch ?? fetch;
  // No redirect is followed, as by the CLI: fetch would resend the call's body (a receipt and its
  // request) to wherever the redirect points, and a gate would act on that origin's answer.
  const timed: typeof fetch = (input, init) => base(input, { ...init, redirect: "manual", signal: init?.signal ?? AbortSignal.timeout(timeoutMs) });
  return hc<AppType>(baseUrl, { headers: options.token ? { authorization: `Bearer ${options.token}` } : {}, fetch: timed });
}

export type CountersignClient = ReturnType<typeof countersignClient>;

/** The verify route's call body, as the compiler knows it from the route. */
export type VerifyCall = Parameters<CountersignClient["v1"]["receipts"]["verify"]["$post"]>[0]["json"];

/** What `gateVerify` answers: the service's decision, or a reject standing in for one it could not get. */
export interface GateAnswer {
  status: number | null;
  valid: boolean;
  decision: "accept" | "reject" | "defer" | "audit";
  failures: { code: string; severity: string; step: number | null; detail: string }[];
  [field: string]: unknown;
}

/** The deny a gate acts on when no decision could be had (CCS 13.9): block, nothing consumed. */
export const unavailable = (status: number | null, detail: string): GateAnswer => ({
  status,
  valid: false,
  decision: "reject",
  failures: [{ code: "VERIFIER_UNAVAILABLE", severity: "CRITICAL", step: null, detail }],
  enforcement: { action: "block", verdict: null, outcome_status: null },
  nonce_consumed: false,
  error: { code: "VERIFIER_UNAVAILABLE", detail },
});

/** The envelope route's call body, as the compiler knows it from the route. */
export type EnvelopeCall = Parameters<CountersignClient["v1"]["envelopes"]["verify"]["$post"]>[0]["json"];

/**
 * A decision call's answer, or the deny standing in for one: a transport error or timeout (the
 * call threw), a 5xx, a redirect, or an answer that is not a decision is VERIFIER_UNAVAILABLE.
 */
async function gate(send: () => Promise<{ status: number; json(): Promise<unknown> }>): Promise<GateAnswer> {
  let res: { status: number; json(): Promise<unknown> };
  try {
    res = await send();
  } catch (err) {
    return unavailable(null, `the verifier could not be reached: ${(err as Error).message}`);
  }
  if (res.status >= 500) return unavailable(res.status, `the verifier answered ${res.status}`);
  // A redirect (an opaque one in a browser, status 0) is no decision: it is not followed, and nothing was judged.
  if (res.status === 0 || (res.status >= 300 && res.status < 400)) return unavailable(res.status, `the verifier answered ${res.status || "a redirect"}; the client follows no redirect: give the service's own URL`);
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return unavailable(res.status, "the verifier's answer is not JSON");
  }
  if (body === null || typeof body !== "object" || typeof (body as GateAnswer).decision !== "string") return unavailable(res.status, "the verifier's answer is not a decision");
  return { ...(body as GateAnswer), status: res.status };
}

/**
 * Verifies one receipt for a gate. Whatever goes wrong between here and the service (refused
 * connection, timeout, a 5xx, a redirect, an answer that is not a decision) is a reject: no evidence, no
 * execution. A 4xx is the service's own answer (a malformed call is not a pass either).
 * `idempotencyKey`: random, drawn once per call the gate is about to run and reused only to retry
 * this verification; never derived from the receipt or the request, or a replay of the same
 * receipt is answered as a retry (`accept` again, `idempotent_replay: true`).
 */
export function gateVerify(client: CountersignClient, call: VerifyCall, idempotencyKey?: string): Promise<GateAnswer> {
  return gate(() => client.v1.receipts.verify.$post({ json: call }, idempotencyKey ? { headers: { "idempotency-key": idempotencyKey } } : undefined));
}

/** Verifies an evidence envelope for a gate, with the same fallback: an unreachable verifier is a deny. */
export function gateEnvelope(client: CountersignClient, call: EnvelopeCall, idempotencyKey?: string): Promise<GateAnswer> {
  return gate(() => client.v1.envelopes.verify.$post({ json: call }, idempotencyKey ? { headers: { "idempotency-key": idempotencyKey } } : undefined));
}
