/**
 * The in-memory ledger (CLI, offline) withdraws a nonce as the IssuerLedger does (CCS §14): a
 * withdrawn nonce is never claimed and answers `withdrawn` on claim and inspect alike; a nonce
 * already claimed stays as it was (a replay).
 */
import { describe, expect, it } from "vitest";
import { memoryLedger } from "../../worker/protocol/memory-ledger.js";
import { withdrawnDetail, type ClaimQuery } from "../../worker/protocol/ledger.js";
import { pagesResets } from "../support/sequence-resets.js";

const query = (nonce: string): ClaimQuery => ({ issuer: "https://countersign.example", nonce, sequence: null, fingerprint: "ab".repeat(32), sequencePolicy: "repeat", retainUntil: 4_000_000_000, retryTag: null });

describe("memoryLedger.withdraw", () => {
  it("holds a nonce not yet claimed as withdrawn (never consumed, on every claim and inspect); leaves a claimed one a replay", async () => {
    const l = memoryLedger();
    expect(await l.claim(query("claimed-before"))).toMatchObject({ consumed: true, replay: null });
    expect(l.withdraw([{ nonce: "not-presented", retainUntil: 4_000_000_000, revokedAt: 1_900_000_000 }, { nonce: "claimed-before", retainUntil: 4_000_000_000, revokedAt: 1_900_000_000 }])).toBe(1);
    for (let i = 0; i < 2; i++) {
      expect(await l.claim(query("not-presented"))).toEqual({ revoked: false, replay: null, withdrawn: withdrawnDetail(1_900_000_000), consumed: false });
      expect(await l.claim({ ...query("not-presented"), retryTag: "a-retry" })).toMatchObject({ withdrawn: withdrawnDetail(1_900_000_000), consumed: false });
    }
    expect(await l.inspect(query("not-presented"))).toMatchObject({ withdrawn: withdrawnDetail(1_900_000_000), consumed: false });
    expect(await l.claim(query("claimed-before"))).toMatchObject({ replay: "nonce claimed-before was already presented", consumed: false });
    expect((await l.claim(query("claimed-before"))).withdrawn).toBeUndefined();
    expect(await l.claim(query("another"))).toMatchObject({ consumed: true, replay: null });
  });
});

describe("memoryLedger.sequenceResets", () => {
  it("pages the audited resets as the IssuerLedger does: the newest SEQUENCE_RESETS_PAGE, oldest first, the total and a cursor (at, rowid) to the older ones", async () => {
    await pagesResets(memoryLedger());
  });
});
