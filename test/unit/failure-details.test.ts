/**
 * Failure details print spans of seconds to the millisecond, whichever check wrote them: a
 * verifier's clock is fractional, so a raw difference prints as 38.88499999046326s.
 */
import { describe, expect, it } from "vitest";
import type { PinnedIssuer } from "../../worker/protocol/anchors.js";
import { checkSeal, type ChainSeal, type SealedChain } from "../../worker/protocol/chain-seal.js";
import { webCryptoVerifier } from "../../worker/protocol/ed25519.js";

const sealer = { chainSealer: true, keys: [] } as unknown as PinnedIssuer;
const seal = (sealed_at: number) => ({ issuer: "https://sealer.example", kid: "k1", sealed_at, signature: "00".repeat(64) }) as unknown as ChainSeal;
const deps = { anchors: async () => sealer, verifier: webCryptoVerifier() };

describe("seal freshness details", () => {
  it("a seal from the future is reported to the millisecond", async () => {
    const [f] = await checkSeal(seal(1_800_000_100), {} as SealedChain, { now: 1_800_000_000 - 0.000012345, skew: 30, latestIssuedAt: null, verifiedAt: 1_800_000_000 }, deps);
    expect(f.code).toBe("FRESHNESS_EXPIRED");
    expect(f.detail).toContain("sealed_at is 100s in the future");
  });

  it("a seal dated before its receipts is reported to the millisecond", async () => {
    const [f] = await checkSeal(seal(1_800_000_000), {} as SealedChain, { now: 1_800_000_500, skew: 30, latestIssuedAt: 1_800_000_038.884999990463, verifiedAt: 1_800_000_500 }, deps);
    expect(f.code).toBe("FRESHNESS_EXPIRED");
    expect(f.detail).toContain("sealed_at is 38.885s before the latest issued_at");
  });
});
