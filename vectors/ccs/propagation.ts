/**
 * CCS §11 vectors: Evidence Envelopes (same-org and self-contained cross-org) and evidence
 * chains (full, spot, pruned, tampered), from fixed seeds. Written by generate.ts beside the
 * receipt vectors.
 */
import { buildChain, pruneChain, receiptDigest, receiptHashOf, type ChainDocument } from "../../worker/protocol/chain.js";
import { sha256Hex } from "../../worker/protocol/digest.js";
import { fromBase64Url } from "../../worker/protocol/encoding.js";
import type { Receipt } from "../../worker/protocol/receipt.js";
import { anchorFor, identity, labelHex, makeReceipt, type Identity } from "./factory.js";

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

  // Chains.
  const hopReceipts = async (tag: string, n: number) => {
    const out: Record<string, unknown>[] = [];
    for (let i = 0; i < n; i++) out.push((await receipt(i % 2 ? p1 : a1, `${tag}/${i}`)) as unknown as Record<string, unknown>);
    return out;
  };
  type ChainExpect = { status: number; chain_valid: boolean; broken_at_hop: number | null; failures: string[]; summary_hash?: string };
  const chains: { id: string; title: string; body: unknown; expect: ChainExpect }[] = [];
  const valid = (summary?: string): ChainExpect => ({ status: 200, chain_valid: true, broken_at_hop: null, failures: [], ...(summary ? { summary_hash: summary } : {}) });
  const brokenAt = (hop: number, failures: string[]): ChainExpect => ({ status: 200, chain_valid: false, broken_at_hop: hop, failures });
  const addChain = (id: string, title: string, chain: ChainDocument, expect: ChainExpect, extra: Record<string, unknown> = {}) => chains.push({ id, title, body: { chain, ...extra }, expect });

  const three = await buildChain("cv-010", await hopReceipts("cv-010", 3));
  addChain("CV-010", "summary hash = SHA-256 over the raw 32-byte receipt digests concatenated in insertion order", three, valid(three.summary_hash));
  const sixteen = await buildChain("sixteen", await hopReceipts("sixteen", 16));
  addChain("CHAIN-16-hops", "a 16-hop chain passes", sixteen, valid(sixteen.summary_hash));
  addChain("CHAIN-17-hops", "a 17-hop chain fails at hop 16", await buildChain("seventeen", await hopReceipts("seventeen", 17)), brokenAt(16, ["16:HOP_LIMIT_EXCEEDED"]));
  const five = await buildChain("five", await hopReceipts("five", 5));
  addChain("CHAIN-pruned", "hops 1 and 2 pruned to their receipt hashes: the chain still verifies", await pruneChain(five, [1, 2]), valid(five.summary_hash));
  addChain("CHAIN-spot", "spot verification of hop 3", five, valid(five.summary_hash), { spot: 3 });
  addChain("CHAIN-spot-wrong-summary", "spot verification refuses a wrong summary hash", { ...five, summary_hash: "sha256:" + "1".repeat(64) }, brokenAt(4, ["4:CHAIN_BROKEN"]), { spot: 1 });
  addChain("CHAIN-hop0-predecessor", "hop 0 naming a predecessor", { ...five, entries: [{ ...five.entries[0], previous_receipt_hash: "sha256:" + "2".repeat(64) }, ...five.entries.slice(1)] }, brokenAt(0, ["0:CHAIN_BROKEN"]));

  // 13.10: insertion, removal, reordering, modification of a 5-hop chain.
  const kept = five.entries.map((e) => (e as { receipt: Record<string, unknown> }).receipt);
  const foreign = (await receipt(a1, "13.10-foreign")) as unknown as Record<string, unknown>;
  const inserted = await buildChain("five", [...kept.slice(0, 2), foreign, ...kept.slice(2)]);
  // The inserted hop links to hop 1 and is renumbered; hop 3 (the old hop 2) still names hop 1.
  addChain("13.10-insertion", "a receipt inserted at hop 2 (linked to hop 1, later hops renumbered)", { ...inserted, entries: inserted.entries.map((e, i) => (i === 3 ? { ...e, previous_receipt_hash: (five.entries[2] as { previous_receipt_hash: string }).previous_receipt_hash } : e)), summary_hash: five.summary_hash, total_hops: 6 }, brokenAt(3, ["3:CHAIN_BROKEN", "5:CHAIN_BROKEN"]));
  const removed = five.entries.filter((_, i) => i !== 2).map((e, i) => ({ ...e, hop_count: i }));
  addChain("13.10-removal", "hop 2 removed and the rest renumbered", { ...five, entries: removed, total_hops: 4 }, brokenAt(2, ["2:CHAIN_BROKEN", "3:CHAIN_BROKEN"]));
  const swapped = [five.entries[0], five.entries[2], five.entries[1], ...five.entries.slice(3)].map((e, i) => ({ ...e, hop_count: i }));
  addChain("13.10-reordering", "hops 1 and 2 swapped and renumbered", { ...five, entries: swapped }, brokenAt(1, ["1:CHAIN_BROKEN", "2:CHAIN_BROKEN", "3:CHAIN_BROKEN", "4:CHAIN_BROKEN"]));
  const modified = five.entries.map((e, i) => {
    if (i !== 2) return e;
    const r = (e as { receipt: Record<string, unknown> }).receipt;
    return { ...e, receipt: { ...r, verified_at: (r.verified_at as number) + 1 } };
  });
  addChain("13.10-modification", "a signed field of hop 2's receipt changed", { ...five, entries: modified }, brokenAt(2, ["2:SIGNATURE_INVALID", "3:CHAIN_BROKEN", "4:CHAIN_BROKEN"]));

  return {
    org_id: ORG_ID,
    anchors: [anchorFor(a1), { ...anchorFor(p1, p2), org_id: SENDER_ORG_ID }],
    envelopes,
    chains,
  };
}
