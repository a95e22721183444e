/**
 * The issuing routes' check of this deployment's own key (own-key.ts): kept per isolate for
 * OWN_KEY_CHECK_TTL_MS, and cleared at once by a revocation this isolate serves.
 */
import { describe, expect, it } from "vitest";
import type { Context } from "hono";
import type { AppEnv } from "../../worker/app.js";
import { forgetOwnKeyCheck, ownKeyRevoked } from "../../worker/own-key.js";

describe("the own key's revocation check", () => {
  it("a check whose KV read was in flight across a revocation this isolate served is answered as read, not kept over it (review rv-110)", async () => {
    const fingerprint = "a".repeat(64);
    const own = { identity: { fingerprint } } as unknown as Parameters<typeof ownKeyRevoked>[1];
    const record = { fingerprint, issuer: "https://own.example", kid: "k1", revoked_at: 1 };
    let revoked = false;
    let release: () => void = () => {};
    let hold = false;
    const c = {
      get: () => ({
        anchors: {
          revokedKey: async () => {
            // The read is made now (before the revocation's write), its answer comes back later.
            const answer = revoked ? record : null;
            if (hold) await new Promise<void>((r) => (release = r));
            return answer;
          },
        },
      }),
    } as unknown as Context<AppEnv>;
    hold = true;
    const inFlight = ownKeyRevoked(c, own);
    // The revocation through this isolate: the global record written, then the check forgotten.
    revoked = true;
    forgetOwnKeyCheck(fingerprint);
    release();
    expect(await inFlight).toBe(false);
    hold = false;
    // The next issuance reads KV again and sees the revocation, not the pre-revocation answer for 10 s.
    expect(await ownKeyRevoked(c, own)).toBe(true);
  });
});
