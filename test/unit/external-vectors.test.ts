import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { jcs } from "../../worker/protocol/digest.js";
import { nobleVerifier, publicKeyFromSeed, signWithSeed, webCryptoVerifier } from "../../worker/protocol/ed25519.js";
import { fromHex, toHex } from "../../worker/protocol/encoding.js";
import { EXTERNAL_VECTORS, ROOT } from "../support/paths.js";

const wycheproof = JSON.parse(readFileSync(resolve(EXTERNAL_VECTORS, "wycheproof/ed25519_test.json"), "utf8"));
const rfc8032: { priv: string; pub: string; msg: string; sig: string }[] = JSON.parse(
  readFileSync(resolve(EXTERNAL_VECTORS, "rfc8032/rfc8032-ed25519.json"), "utf8"),
);
const cases = wycheproof.testGroups.flatMap((g: { publicKey: { pk: string }; tests: { tcId: number; msg: string; sig: string; result: string; comment: string }[] }) =>
  g.tests.map((t) => ({ ...t, pk: g.publicKey.pk })),
);

describe("Wycheproof Ed25519 (151 cases)", () => {
  it("has all 151 cases", () => expect(cases).toHaveLength(151));
  for (const [name, verifier] of [["@noble/ed25519 zip215:false", nobleVerifier], ["Node WebCrypto", webCryptoVerifier()]] as const) {
    it(`${name} matches the expected result of every case`, async () => {
      const mismatches: number[] = [];
      for (const t of cases) {
        const sig = fromHex(t.sig) ?? new Uint8Array(0);
        const ok = await verifier.verify(fromHex(t.pk)!, `wp-${t.pk}`, sig, fromHex(t.msg)!);
        if (ok !== (t.result === "valid")) mismatches.push(t.tcId);
      }
      expect(mismatches).toEqual([]);
    });
  }
});

describe("RFC 8032 §7.1 vectors", () => {
  it.each(rfc8032.map((v, i) => [i, v] as const))("vector %i: public key, signature and verification agree", async (_i, v) => {
    const seed = fromHex(v.priv)!;
    expect(toHex(publicKeyFromSeed(seed))).toBe(v.pub);
    expect(toHex(signWithSeed(fromHex(v.msg)!, seed))).toBe(v.sig);
    expect(await nobleVerifier.verify(fromHex(v.pub)!, v.pub, fromHex(v.sig)!, fromHex(v.msg)!)).toBe(true);
  });
});

describe("RFC 8785 JCS input/output pairs", () => {
  const dir = resolve(EXTERNAL_VECTORS, "jcs");
  const files = readdirSync(resolve(dir, "input")).sort();
  it("has the six pairs", () => expect(files).toHaveLength(6));
  it.each(files)("%s canonicalises byte for byte", (file) => {
    const input = JSON.parse(readFileSync(resolve(dir, "input", file), "utf8"));
    const expected = readFileSync(resolve(dir, "output", file));
    expect(Buffer.from(jcs(input), "utf8").equals(expected)).toBe(true);
  });
});

/**
 * The checkout's own code and configuration: every file a suite, a script, the CLI or the Worker
 * runs from (installed packages, git's and wrangler's folders aside).
 */
function checkoutCode(dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (["node_modules", ".git", ".wrangler"].includes(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return checkoutCode(path);
    return /\.(ts|mjs|js|json|toml)$/.test(e.name) || relative(ROOT, path) === ".ci/run" ? [path] : [];
  });
}

const inside = (path: string) => !relative(ROOT, path).startsWith("..");

describe("self-contained: nothing outside the checkout is read", () => {
  const files = checkoutCode();

  it("no file names the folder the external vectors were read from before they were vendored", () => {
    // Spelt in pieces, so this file does not name them itself: the folder beside the checkout, the
    // variable that pointed elsewhere, and the folder's own name.
    const old = new RegExp(["\\.\\./" + "shared\\b", "COUNTERSIGN_" + "SHARED", "vectors-" + "external"].join("|"));
    const naming = files.filter((f) => old.test(readFileSync(f, "utf8")));
    expect(naming.map((f) => relative(ROOT, f))).toEqual([]);
  });

  it("every relative import resolves inside the checkout", () => {
    const outside: string[] = [];
    for (const file of files.filter((f) => /\.(ts|mjs|js)$/.test(f))) {
      for (const m of readFileSync(file, "utf8").matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']*)["']/g)) {
        if (!inside(resolve(dirname(file), m[1]))) outside.push(`${relative(ROOT, file)}: ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it("every path a file builds from its own location with resolve() or join() stays inside the checkout", () => {
    const outside: string[] = [];
    let built = 0;
    for (const file of files.filter((f) => /\.(ts|mjs|js)$/.test(f))) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        if (!/\b(resolve|join)\(/.test(line) || !/import\.meta\.(url|dirname)/.test(line)) continue;
        // resolve(fileURLToPath(import.meta.url), "..") starts from the file itself, one level below its folder.
        const base = /fileURLToPath\(import\.meta\.url\)\s*,/.test(line) ? file : dirname(file);
        for (const m of line.matchAll(/["'`]((?:\.\.?(?:\/|(?=["'`])))[^"'`]*)["'`]/g)) {
          built++;
          if (!inside(resolve(base, m[1]))) outside.push(`${relative(ROOT, file)}: ${line.trim()}`);
        }
      }
    }
    expect(built).toBeGreaterThan(0);
    expect(outside).toEqual([]);
  });
});
