/**
 * CCS §11 vectors: Evidence Envelopes (same-org and self-contained cross-org) and evidence
 * chains (signed links, unsigned links, sealed and unsealed pruning, sealed and unsealed spot,
 * seals by an issuer not trusted to seal or from the future, stale, repeated, tampered, and the
 * forgeries a document alone once passed), from fixed seeds. Written by generate.ts beside the
 * receipt vectors.
 */
import { buildChain, pruneChain, receiptDigest, receiptHashOf, summaryHash, type ChainDocument, type ChainHop, type KeptEntry } from "../../worker/protocol/chain.js";
import { signSeal, type SealedChain } from "../../worker/protocol/chain-seal.js";
import { sha256Hex } from "../../worker/protocol/digest.js";
import { fromBase64Url, fromHex } from "../../worker/protocol/encoding.js";
import type { Receipt } from "../../worker/protocol/receipt.js";
import { anchorFor, identity, labelHex, makeChainHops, makeReceipt, type Identity, type ReceiptSpec } from "./factory.js";

export const ORG_ID = "https://relying-org.example";
export const SENDER_ORG_ID = "https://sender-org.example";

export async function generatePropagation(now: number, audience: string) {
  const a1 = await identity("issuer-a/a1", "https://issuer-a.example", "a1");
  const p1 = await identity("partner/p1", "https://partner-issuer.example", "p1");
  const p2 = await identity("partner/p2", "https://partner-issuer.example", "p2");
  const attacker = await identity("attacker", "https://attacker.example", "x1");
  let sequence = 100_000;
  const receipt = async (id: Identity, label: string, extra: { claimIssuer?: string } = {}) =>
    (await makeReceipt(id, { label: `propagation/${label}`, audience, issuedAt: now - 10, sequence: (sequence += 10), ...extra })).receipt;
  const hashOf = async (r: Receipt) => receiptHashOf(await receiptDigest(r as unknown as Record<string, unknown>));
  const fingerprint = async (id: Identity) => sha256Hex(fromBase64Url(id.publicKey)!);

  const envelope = async (r: Receipt, hop: number, extra: Record<string, unknown> = {}) => ({
    envelope_version: "1.3",
    original_receipt: r,
    parent_trace_id: r.trace_id,
    child_trace_id: await labelHex(`propagation/child/${r.nonce}`, 16),
    delegation_reason: "planner delegates the transfer to the payments agent",
    hop_count: hop,
    previous_receipt_hash: await hashOf(r),
    ...extra,
  });
  const crossOrg = async (id: Identity, extra: Record<string, unknown> = {}) => ({
    sender_org_id: SENDER_ORG_ID,
    receiver_org_id: ORG_ID,
    trust_anchor_reference: await fingerprint(id),
    self_contained: true,
    issuer_public_key: id.publicKey,
    ...extra,
  });
  const decision = (valid: boolean, codes: string[], consumed: boolean, status = 200) => ({ status, valid, decision: valid ? "accept" : "reject", codes, nonce_consumed: consumed });
  const envelopes: { id: string; title: string; calls: { body: unknown; expect: ReturnType<typeof decision> }[] }[] = [];
  const addEnvelope = (id: string, title: string, calls: { body: unknown; expect: ReturnType<typeof decision> }[]) => envelopes.push({ id, title, calls });
  const call = (env: unknown, mode?: string) => ({ envelope: env, audience, ...(mode ? { mode } : {}) });

  addEnvelope("CV-008", "an envelope hands a receipt on to the next agent: accepted, its nonce consumed once", [
    { body: call(await envelope(await receipt(a1, "cv-008"), 1)), expect: decision(true, [], true) },
  ]);
  const cv8replay = call(await envelope(await receipt(a1, "cv-008-replay"), 2));
  addEnvelope("CV-008-replay", "the same envelope presented twice: the second is a replay", [
    { body: cv8replay, expect: decision(true, [], true) },
    { body: cv8replay, expect: decision(false, ["REPLAY_DETECTED"], false) },
  ]);
  const partnerReceipt = await receipt(p1, "cv-009");
  addEnvelope("CV-009", "self-contained cross-org envelope: verified under the key it carries, which is pinned for the issuer", [
    { body: call({ ...(await envelope(partnerReceipt, 1)), ...(await crossOrg(p1)) }), expect: decision(true, [], true) },
  ]);
  const broken = await receipt(a1, "env-broken");
  addEnvelope("ENV-broken-never-consumes", "a broken link (wrong previous_receipt_hash) is refused without consuming the nonce; the intact envelope then passes", [
    { body: call(await envelope(broken, 1, { previous_receipt_hash: "sha256:" + "0".repeat(64) })), expect: decision(false, ["CHAIN_BROKEN"], false) },
    { body: call(await envelope(broken, 1)), expect: decision(true, [], true) },
  ]);
  addEnvelope("ENV-parent-trace", "parent_trace_id is not the receipt's trace_id", [
    { body: call(await envelope(await receipt(a1, "env-parent"), 1, { parent_trace_id: "0123456789abcdef" })), expect: decision(false, ["CHAIN_BROKEN"], false) },
  ]);
  addEnvelope("ENV-hop-limit", "hop_count 17 exceeds 16", [
    { body: call(await envelope(await receipt(a1, "env-hops"), 17)), expect: decision(false, ["HOP_LIMIT_EXCEEDED"], false) },
  ]);
  addEnvelope("ENV-hop-16", "hop_count 16 is the last accepted", [
    { body: call(await envelope(await receipt(a1, "env-hop16"), 16)), expect: decision(true, [], true) },
  ]);
  addEnvelope("ENV-org-mismatch", "a cross-org envelope addressed to another organisation", [
    { body: call({ ...(await envelope(await receipt(p1, "env-org"), 1)), ...(await crossOrg(p1, { receiver_org_id: "https://someone-else.example" })) }), expect: decision(false, ["ORG_MISMATCH"], false) },
  ]);
  addEnvelope("ENV-sender-org-mismatch", "a cross-org envelope whose sender_org_id is not the organisation pinned for the issuer", [
    { body: call({ ...(await envelope(await receipt(p1, "env-sender"), 1)), ...(await crossOrg(p1, { sender_org_id: "https://impostor-org.example" })) }), expect: decision(false, ["ORG_MISMATCH"], false) },
  ]);
  addEnvelope("ENV-org-not-uri", "organisation ids are URIs: a bare name is a malformed envelope", [
    { body: call({ ...(await envelope(await receipt(p1, "env-org-uri"), 1)), ...(await crossOrg(p1, { sender_org_id: "sender-org" })) }), expect: decision(false, ["ENVELOPE_MALFORMED"], false, 400) },
  ]);
  const stripped = { ...(await receipt(p1, "13.11-sig")) } as Partial<Receipt>;
  delete stripped.signature;
  addEnvelope("13.11-signature-stripped", "cross-org envelope whose receipt signature was stripped: NOT_SELF_CONTAINED, never a pass", [
    { body: call({ ...(await envelope(await receipt(p1, "13.11-sig"), 1)), original_receipt: stripped, ...(await crossOrg(p1)) }), expect: decision(false, ["NOT_SELF_CONTAINED"], false) },
  ]);
  const keyless = await crossOrg(p1);
  delete (keyless as Partial<typeof keyless>).issuer_public_key;
  addEnvelope("13.11-key-stripped", "cross-org envelope whose issuer key was stripped: NOT_SELF_CONTAINED", [
    { body: call({ ...(await envelope(await receipt(p1, "13.11-key"), 1)), ...keyless }), expect: decision(false, ["NOT_SELF_CONTAINED"], false) },
  ]);
  addEnvelope("ENV-reference-mismatch", "trust_anchor_reference names another key than the one carried", [
    { body: call({ ...(await envelope(await receipt(p1, "env-ref"), 1)), ...(await crossOrg(p1, { trust_anchor_reference: await fingerprint(p2) })) }), expect: decision(false, ["NOT_SELF_CONTAINED"], false) },
  ]);
  addEnvelope("ENV-signed-by-other-pinned-key", "the carried key is pinned but the receipt was signed by the issuer's other key", [
    { body: call({ ...(await envelope(await receipt(p2, "env-other-key"), 1)), ...(await crossOrg(p1)) }), expect: decision(false, ["SIGNATURE_INVALID"], false) },
  ]);
  addEnvelope("ENV-attacker-key", "an attacker carries its own key and claims a pinned issuer", [
    { body: call({ ...(await envelope(await receipt(attacker, "env-attacker", { claimIssuer: p1.issuer }), 1)), ...(await crossOrg(attacker)) }), expect: decision(false, ["SIGNATURE_INVALID", "UNTRUSTED_ISSUER"], false) },
  ]);
  addEnvelope("ENV-malformed", "an envelope of another version", [
    { body: call({ ...(await envelope(await receipt(a1, "env-version"), 1)), envelope_version: "1.2" }), expect: decision(false, ["ENVELOPE_MALFORMED"], false, 400) },
  ]);

  // Chains. Signed chains: each receipt's runtime context carries `delegation` naming the receipt before.
  const signedHops = async (tag: string, n: number, at: (i: number) => Partial<ReceiptSpec> & { id?: Identity } = () => ({})) =>
    makeChainHops(
      Array.from({ length: n }, (_, i) => {
        const { id, ...extra } = at(i);
        return { id: id ?? (i % 2 ? p1 : a1), spec: { label: `propagation/${tag}/${i}`, audience, issuedAt: now - 10, sequence: (sequence += 10), ...extra } };
      }),
    );
  /** Receipts with no delegation: a document can only claim their links, never show them signed. */
  const plainHops = async (tag: string, n: number) => {
    const out: ChainHop[] = [];
    for (let i = 0; i < n; i++) out.push({ receipt: await receipt(i % 2 ? p1 : a1, `${tag}/${i}`) });
    return out;
  };
  const sealOf = async (chain: ChainDocument, by: Identity = a1, extra: Partial<SealedChain> = {}, sealedAt = now - 5) => {
    const last = chain.entries.at(-1)!;
    const tail = "pruned" in last ? last.receipt_hash : await hashOf(last.receipt as unknown as Receipt);
    return signSeal({ chain_id: chain.chain_id, total_hops: chain.entries.length, summary_hash: chain.summary_hash, tail, ...extra }, by, sealedAt);
  };
  type ChainExpect = { status: number; chain_valid: boolean; broken_at_hop: number | null; failures: string[]; summary_hash?: string; spot_valid?: boolean };
  const chains: { id: string; title: string; body: unknown; expect: ChainExpect }[] = [];
  const valid = (summary?: string): ChainExpect => ({ status: 200, chain_valid: true, broken_at_hop: null, failures: [], ...(summary ? { summary_hash: summary } : {}) });
  const brokenAt = (hop: number, failures: string[]): ChainExpect => ({ status: 200, chain_valid: false, broken_at_hop: hop, failures });
  const addChain = (id: string, title: string, chain: ChainDocument, expect: ChainExpect, extra: Record<string, unknown> = {}) => chains.push({ id, title, body: { chain, ...extra }, expect });

  const three = await buildChain("cv-010", await signedHops("cv-010", 3));
  addChain("CV-010", "summary hash = SHA-256 over the raw 32-byte receipt digests concatenated in insertion order; every link signed", three, valid(three.summary_hash));
  const sixteen = await buildChain("sixteen", await signedHops("sixteen", 16));
  addChain("CHAIN-16-hops", "a 16-hop chain of signed links passes", sixteen, valid(sixteen.summary_hash));
  addChain("CHAIN-17-hops", "a 17-hop chain fails at hop 16", await buildChain("seventeen", await signedHops("seventeen", 17)), brokenAt(16, ["16:HOP_LIMIT_EXCEEDED"]));
  const unsigned = await buildChain("unsigned", await plainHops("unsigned", 3));
  addChain("CHAIN-unsigned-links", "links only the document states (no signed delegation) never make a chain valid on their own", unsigned, brokenAt(1, ["1:LINK_UNSIGNED", "2:LINK_UNSIGNED"]));
  addChain("CHAIN-unsigned-links-sealed", "the same document under a valid seal by a pinned issuer passes", unsigned, valid(unsigned.summary_hash), { seal: await sealOf(unsigned) });
  const five = await buildChain("five", await signedHops("five", 5));
  const fivePruned = await pruneChain(five, [1, 2]);
  addChain("CHAIN-pruned-unsealed", "hops 1 and 2 pruned and no seal: a pruned entry stands only under a seal", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED"]));
  addChain("CHAIN-pruned-sealed", "hops 1 and 2 pruned under a valid seal covering the chain: passes", fivePruned, valid(five.summary_hash), { seal: await sealOf(five) });
  addChain("CHAIN-seal-forged", "a seal signed by another key than the pinned one it names", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED", "4:SEAL_INVALID"]), { seal: { ...(await sealOf(five, attacker)), issuer: a1.issuer, kid: a1.kid } });
  addChain("CHAIN-seal-unpinned", "a seal by an issuer that is not pinned", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED", "4:UNTRUSTED_ISSUER"]), { seal: await sealOf(five, attacker) });
  addChain("CHAIN-seal-not-sealer", "a seal by an issuer pinned for its receipts but not as a chain sealer", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED", "4:SEALER_NOT_TRUSTED"]), { seal: await sealOf(five, p1) });
  addChain("CHAIN-seal-future", "a seal whose sealed_at is an hour ahead of the verifier's clock", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED", "4:FRESHNESS_EXPIRED"]), { seal: await sealOf(five, a1, {}, now + 3600) });
  addChain("CHAIN-seal-other-chain", "a valid seal over another chain (total_hops 4): it vouches for nothing here", fivePruned, brokenAt(1, ["1:CHAIN_UNSEALED", "2:CHAIN_UNSEALED", "4:SEAL_MISMATCH"]), { seal: await sealOf(five, a1, { total_hops: 4 }) });
  addChain("CHAIN-spot", "spot verification of hop 3 without a seal: the hop passes, but nothing vouches for the others", five, { ...brokenAt(0, ["0:CHAIN_UNSEALED"]), spot_valid: true }, { spot: 3 });
  addChain("CHAIN-spot-sealed", "spot verification of hop 3 under a valid seal covering the chain: passes", five, { ...valid(five.summary_hash), spot_valid: true }, { spot: 3, seal: await sealOf(five) });
  addChain("CHAIN-spot-wrong-summary", "spot verification refuses a wrong summary hash", { ...five, summary_hash: "sha256:" + "1".repeat(64) }, { ...brokenAt(0, ["0:CHAIN_UNSEALED", "4:CHAIN_BROKEN"]), spot_valid: true }, { spot: 1 });
  addChain("CHAIN-hop0-predecessor", "hop 0 naming a predecessor", { ...five, entries: [{ ...five.entries[0], previous_receipt_hash: "sha256:" + "2".repeat(64) }, ...five.entries.slice(1)] }, brokenAt(0, ["0:CHAIN_BROKEN"]));
  const stale = await buildChain("stale", await signedHops("stale", 3, (i) => (i === 1 ? { issuedAt: now - 30 * 86400 } : {})));
  addChain("CHAIN-stale-receipt", "a 30-day-old receipt at hop 1: freshness is judged by default", stale, brokenAt(1, ["1:FRESHNESS_EXPIRED"]));
  addChain("CHAIN-stale-archival", "the same chain with check_freshness: false (archival audit): passes", stale, valid(stale.summary_hash), { check_freshness: false });

  // The forgeries a document alone made possible, each now refused with its code.
  const [u0, u1] = await plainHops("forge-unrelated", 2);
  addChain("FORGE-unrelated-receipts", "two unrelated receipts with a recomputed previous_receipt_hash and summary", await buildChain("forge-unrelated", [u0, u1]), brokenAt(1, ["1:LINK_UNSIGNED"]));
  const [real] = await plainHops("forge-pruned-hop0", 1);
  const fabricated = await buildChain("forge-pruned-hop0", [{ receipt: await receipt(a1, "forge-pruned-hop0/decoy") }, real]);
  const fabricatedHash = "sha256:" + (await labelHex("forge-pruned-hop0/fabricated", 64));
  const hop0Fabricated = { ...fabricated, entries: [{ hop_count: 0, receipt_hash: fabricatedHash, pruned: true as const }, { ...fabricated.entries[1], previous_receipt_hash: fabricatedHash }] };
  addChain("FORGE-fabricated-pruned-hop0", "a fabricated pruned hop 0 before a real receipt, summary recomputed", { ...hop0Fabricated, summary_hash: await summaryHash([fromHex(fabricatedHash.slice(7))!, await receiptDigest(real.receipt as Record<string, unknown>)]) }, brokenAt(0, ["0:CHAIN_UNSEALED", "1:LINK_UNSIGNED"]));
  const hidden = await buildChain("forge-hidden", await signedHops("forge-hidden", 3, (i) => (i === 1 ? { id: attacker } : {})));
  addChain("FORGE-unpinned-kept", "a receipt under an unpinned key, kept: refused at its hop", hidden, brokenAt(1, ["1:UNTRUSTED_ISSUER"]));
  addChain("FORGE-unpinned-hidden-as-pruned", "the same receipt hidden as a pruned hop without a seal", await pruneChain(hidden, [1]), brokenAt(1, ["1:CHAIN_UNSEALED"]));
  const [x] = await plainHops("forge-thrice", 1);
  const thrice = await buildChain("forge-thrice", [x, x, x]);
  addChain("FORGE-same-receipt-thrice", "[x, x, x]: the same receipt three times", thrice, brokenAt(1, ["1:RECEIPT_REPEATED", "1:LINK_UNSIGNED", "2:RECEIPT_REPEATED", "2:LINK_UNSIGNED"]));
  addChain("CHAIN-repeat-under-seal", "[x, x, x] under a valid seal: a seal vouches for links, never for a repeat", thrice, brokenAt(1, ["1:RECEIPT_REPEATED", "2:RECEIPT_REPEATED"]), { seal: await sealOf(thrice) });
  const repeatPruned = await pruneChain(await buildChain("repeat-pruned", [x, x]), [1]);
  addChain("CHAIN-repeat-pruned", "a receipt repeated as a pruned entry, under a valid seal", repeatPruned, brokenAt(1, ["1:RECEIPT_REPEATED"]), { seal: await sealOf(repeatPruned) });

  // 13.10: insertion, removal, reordering, modification of a 5-hop chain of signed links.
  const kept = five.entries.map((e) => ({ receipt: (e as KeptEntry).receipt, runtime_context: (e as KeptEntry).runtime_context }));
  const foreign = { receipt: await receipt(a1, "13.10-foreign") };
  const inserted = await buildChain("five", [...kept.slice(0, 2), foreign, ...kept.slice(2)]);
  addChain("13.10-insertion", "a receipt inserted at hop 2 (document links and summary recomputed)", inserted, brokenAt(2, ["2:LINK_UNSIGNED", "3:CHAIN_BROKEN", "3:CHAIN_BROKEN", "3:CHAIN_BROKEN", "4:CHAIN_BROKEN", "5:CHAIN_BROKEN"]));
  const removed = await buildChain("five", kept.filter((_, i) => i !== 2));
  addChain("13.10-removal", "hop 2 removed (document links and summary recomputed)", removed, brokenAt(2, ["2:CHAIN_BROKEN", "2:CHAIN_BROKEN", "2:CHAIN_BROKEN", "3:CHAIN_BROKEN"]));
  const swapped = await buildChain("five", [kept[0], kept[2], kept[1], ...kept.slice(3)]);
  addChain("13.10-reordering", "hops 1 and 2 swapped (document links and summary recomputed)", swapped, brokenAt(1, ["1:CHAIN_BROKEN", "1:CHAIN_BROKEN", "1:CHAIN_BROKEN", "2:CHAIN_BROKEN", "2:CHAIN_BROKEN", "2:CHAIN_BROKEN", "3:CHAIN_BROKEN", "3:CHAIN_BROKEN"]));
  const modified = five.entries.map((e, i) => {
    if (i !== 2) return e;
    const r = (e as KeptEntry).receipt;
    return { ...e, receipt: { ...r, verified_at: (r.verified_at as number) + 1 } };
  });
  addChain("13.10-modification", "a signed field of hop 2's receipt changed", { ...five, entries: modified }, brokenAt(2, ["2:SIGNATURE_INVALID", "3:CHAIN_BROKEN", "3:CHAIN_BROKEN", "4:CHAIN_BROKEN"]));
  const rebound = five.entries.map((e, i) => (i === 2 ? { ...e, runtime_context: { ...((e as KeptEntry).runtime_context as object), region: "elsewhere" } } : e));
  addChain("CHAIN-runtime-context-rebound", "hop 2 presents another runtime context than its receipt signed", { ...five, entries: rebound }, brokenAt(2, ["2:BINDING_MISMATCH"]));

  return {
    org_id: ORG_ID,
    // issuer-a is trusted to seal chains; the partner issuer only for its receipts.
    anchors: [{ ...anchorFor(a1), chain_sealer: true }, { ...anchorFor(p1, p2), org_id: SENDER_ORG_ID }],
    envelopes,
    chains,
  };
}
