/** docs/wire-profile.md's worked example, recomputed: the page cannot say what the code does not do. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { jcs, prefixedDigest, sha256Hex } from "../../worker/protocol/digest.js";
import { nobleVerifier, publicKeyFromSeed } from "../../worker/protocol/ed25519.js";
import { fromBase64Url, fromHex, toBase64Url } from "../../worker/protocol/encoding.js";
import { canonicalReceipt, parseReceipt } from "../../worker/protocol/receipt.js";
import { ROOT } from "../support/paths.js";

const page = readFileSync(resolve(ROOT, "docs/wire-profile.md"), "utf8");
const block = (tag: string) => JSON.parse(new RegExp("```json " + tag + "\\n([\\s\\S]*?)```").exec(page)![1]);
const stated = (pattern: RegExp) => pattern.exec(page)![1];

describe("docs/wire-profile.md", () => {
  it("states the digests, the key and the signature of its example as the code computes them", async () => {
    const command = block("command");
    const receipt = block("receipt");
    const seed = fromHex(stated(/seed \(hex\)\s+([0-9a-f]{64})/))!;
    const publicKey = stated(/public key \(b64url\) ([A-Za-z0-9_-]{43})/);
    expect(toBase64Url(publicKeyFromSeed(seed))).toBe(publicKey);
    const paramsDigest = await sha256Hex(jcs(command.params));
    expect(page).toContain(paramsDigest);
    expect(receipt.action).toBe(`ccs:tool-invoke:${command.tool}:${paramsDigest}`);
    expect(receipt.params_hash).toBe(paramsDigest.slice(0, 16));
    expect(page).toContain(jcs(command));
    expect(receipt.request_hash).toBe(await prefixedDigest(jcs(command)));
    expect(parseReceipt(receipt).ok).toBe(true);
    const { signedBytes, fullText } = canonicalReceipt(receipt);
    expect(await nobleVerifier.verify(fromBase64Url(publicKey)!, "", fromHex(receipt.signature)!, signedBytes)).toBe(true);
    expect(page).toContain(`Its receipt hash is\n\`${await prefixedDigest(fullText)}\``);
  });
});
