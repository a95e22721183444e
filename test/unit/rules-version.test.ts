/**
 * `config_hash` commits to the rules' scope data through `policy_version` and to their code through
 * `verifier_version`. The data is digested at run time; the code cannot be, so this test digests
 * the source of every file that decides a rule's verdict and holds each `verifier_version` to the
 * code it was released with. Changing that code fails here until VERIFIER_VERSION is bumped and the
 * new version is added below with the new digest: an entry already released is never rewritten, so
 * two receipts with one `config_hash` were judged by the same code.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { VERIFIER_VERSION } from "../../worker/protocol/issuing/config.js";

const ROOT = resolve(import.meta.dirname, "../..");
const ISSUING = join(ROOT, "worker/protocol/issuing");

/** Every released verifier_version and the digest of its rules' code. */
const RELEASED: Record<string, string> = {
  "countersign/0.2.0": "eeba6724525743f485d30d229f5b8d871a1422590750a5b716206c845d242fad",
  "countersign/0.2.1": "a733b93b59f7959504c433eecdac5b5fd2892f6338f172f0998a768266775590",
  "countersign/0.2.2": "de8a0bdfcf945e984d2233658a224d7cea41b7ac6a96a4b4263d8c53c9087917",
  "countersign/0.2.3": "dd3485a90dbd32f5802feb362ffd3019a8c76519e426da0d2dd80c333b840198",
  "countersign/0.2.4": "33dbd27241a0e3dc20e237831cd271b9429dd1953da9811d328111d58a33d92f",
  "countersign/0.2.5": "9fa338c8ad56de3894cff5a752953e4e7c142842f5bbeb6186b98f84359a05ab",
  "countersign/0.2.6": "f38a8373f2ad86b9e629f0121b6033d198d9c349e08cc6cddb072cbf2c7e6559",
  "countersign/0.2.7": "d667aded105d0055cab52afd1977c5aab2c446758c5cb196f22bd64c68938920",
  "countersign/0.2.8": "72c7e8f12959c8f2fa48e0958f550fe85585f99237ad5cd41791b39c48511092",
  "countersign/0.2.9": "e421a2d9d16e4e17191b83507f447cf4936dae6e481523023c9a82af441d21e3",
  "countersign/0.2.10": "d5171fcb251451bbdae57c36774a6c91b867a4d62dc9f52c8d4840bd3e2b30ec",
  "countersign/0.2.11": "c30e645b0e4b2549b26369ab84489a6faf251e76eea315cddd35b8522f638f65",
  "countersign/0.2.12": "e23e2b0c9fe45059fbf51a547921e10a33421b9d18bd3c65af7baf22c30bda3f",
  "countersign/0.2.13": "1c1364612b0bf39294703fdb5d84b25cbf84f394fdb1e8c9d82b2d1ed2001781",
  "countersign/0.2.14": "439f5c1fd9379e810be5a8c2ef7e420c057b89d0b721ece5e8f276866acb754e",
  "countersign/0.2.15": "95c53dd53bdb7e68ab6d0eee921eda89751c5f2df1f6f7f2df0d1ad2e18145bf",
  "countersign/0.2.16": "6218e05b88bbee005972cd331897d112cfd2154492906e43ce455c7835976ab3",
  "countersign/0.2.17": "c0197e1ec69bb769209a8da76edde249540e70e8c1a7a528c498d0b77cf2595b",
  "countersign/0.2.18": "094b8976bc22098443dc204fed8e59a528ca5e1cdb0b2225265be794eeaa3f59",
  "countersign/0.2.19": "526ee88e52fe4ada8f3f3f144d5896c28bdc32c31adb98c848d3117de5a56a1f",
  "countersign/0.2.20": "9ca98021e8ca9d6e9ecae1b780534e3d5d2101051b43a22a507d14aa164a02e2",
  "countersign/0.2.21": "24e13faa4ff66aa00d3d23a052a37719cea187e6b3392e8cbac50003489f2339",
  "countersign/0.2.22": "3a2c4ce8584159defb8d8f34722c2c514ed657a5b1dc2bb168515c140fe72898",
  "countersign/0.2.23": "d3d8c84d9bda36f0243a7c2c43289199e564ceb1d43de69723be2357a49a5baa",
  "countersign/0.2.24": "bbdef06b9a5ceab1c2b537688b4e510ebc09ad3f5640bc3ace57fd7342160a6b",
  "countersign/0.2.25": "b6a89784911243cc27eba142f083c024427f74362874c4df47f8c66afcfc016a",
  "countersign/0.2.26": "eb31b2b3d38a1d57401920753b3598d9293e850a07be895772f446ce9f965903",
  "countersign/0.2.27": "71a2f5cf4f8118ce14d4aaa9b48a71651b70f14031dcc1cc027701728899c5c9",
  "countersign/0.2.28": "b3926a137be421140296d5f1378897b2af42841c53ba2af47fc65e6a65a670d5",
  "countersign/0.2.29": "81368f95a9d3301789ac41dfc45887265c02a2ac0574f758746c7a7495881957",
  "countersign/0.2.30": "eea235b99c1ef93cc75a908195e52bba009b8b130d13e05cfcde95f4dd1c8965",
  "countersign/0.2.31": "f77f84fd879eaebbf1779a9c4dbad30336d6912f762035ad2d952758c7763eac",
  "countersign/0.2.32": "f6c12a80bee5f8d1a7eb9371fc075f76dc3c5aba5b7281d72a8188d44276035c",
  "countersign/0.2.33": "bcf667246ecc656ecc248f2c727cc5be98c70f936b40139b44834413e4564d40",
  "countersign/0.2.34": "e4277775d5bcf1fe73828bce1c2bbeeca509ae04ca3e8cb2a091940a6ea690f0",
  "countersign/0.2.35": "5d4386499dec4e6fe7339920f2c84e69a9c67591965597ff0f800cd091f9904c",
  "countersign/0.2.36": "a31f9e6f99a9b4ace5ac8bae8d27780dabf2fcad9831e672a91837e7ab7db730",
  "countersign/0.2.37": "5f45bf295819c1bdfa32ccb98314d3c83545ad6397c42a8c3ebe21841143e68d",
  "countersign/0.2.38": "f856e000d7056130da378fc9942e6bdfc070dac5f55e665b24248bec5f1d2775",
  "countersign/0.2.39": "041c4458527e73b5b98db35691ac909d664948bf6298be3d7850dece49e21af0",
  "countersign/0.2.40": "dd95a4e9670e429d17e5e70c3b6198940c729f05ccbf0e96f3dda90e44d48069",
  "countersign/0.2.41": "dd0e90d9ab5cf8d4133d47ffe839618e5f7781f7e210f49e161ac3350898904a",
  "countersign/0.2.42": "f6102245c7fb852cc664495c2bf0711151cd73848b6a83ac91aaf5b39352a973",
  "countersign/0.2.43": "7372d9e945a3bb5bd71d057cec343e9fc8d2d2c2bbd4bf3e58f0de7bb4694719",
  "countersign/0.2.44": "38f63e69d6807b22f2668452291249862a5066e86d7df9d69e5a6102641c17e1",
  "countersign/0.2.45": "d5e1cc80bf462a73d67a5fa89a620958bada385ed12fc957a44ef783cb931ba4",
  "countersign/0.2.46": "2b5d82357724b6ac5e0300a0d2e8178ac85b74b2a075077383b815d514d0b6a4",
  "countersign/0.2.47": "22e9f26d32ae91f6ee96f1696e87bbcf6e826b859b3a9e6bed9d43cb575da004",
  "countersign/0.2.48": "761c7b238746d11ee4b8b7e269602f53525ccb576d813fc961a87f108b5af26d",
  "countersign/0.2.49": "9d8b62928ad48aa4932424423215883288b1eb39b16bb8083b12ecb7fd6d2de1",
  "countersign/0.2.50": "2f1f166a00a4e432dc5b377b333e259ebca6c43502ad771df3fd9f224102345c",
  "countersign/0.2.51": "f184cfddaf2173fb89b02e0b244a9af2e44ffd8f2cf520614a13c1d117f0c362",
  "countersign/0.2.52": "21798f81d137697391a79efc298c51af3c18c7dd2985d563abaf6d1cb27cfeac",
  "countersign/0.2.53": "71b3daa4752d6260ca9536c7332659d13265c6f0862b4c4a8a223ed4fd590f46",
  "countersign/0.2.54": "d4cf132b88b51b8faac8882150918bdfadd2a566fc82cc01cab35f1793fbcac8",
  "countersign/0.2.55": "fffc0c61a2f654ef320ef37a0485faf684737c725036c66dc1a275110bd2dc1c",
  "countersign/0.2.56": "fcbd15d0d5afd597c1f12751247b8dd9d743006d24a04db0003cbbff4c5df0da",
  "countersign/0.2.57": "24fa0c27c327ed6242732d0157d4fa8b8dbb72ccb7629d2d4c5507f695c0bb67",
  "countersign/0.2.58": "85750908f61082cf0a5eb7c8313fbfc10f04d2d5547686b4b1030abc2fa203e7",
};

/**
 * The rules, the shell and host readers they share, the Command's normalisation, the policy floor,
 * and the issuing lifecycle that turns their results into a receipt's verdict, block_reason and
 * rule_summary (the policy floor's reason, the evidence check of challenge.ts).
 */
function rulesRoots(): string[] {
  const rules = readdirSync(join(ISSUING, "rules")).filter((f) => f.endsWith(".ts")).map((f) => join(ISSUING, "rules", f));
  return [...rules, ...["command.ts", "hosts.ts", "lifecycle.ts", "policy-floor.ts", "shell.ts"].map((f) => join(ISSUING, f))];
}

/** A module's relative imports and re-exports that exist at run time (`import type`/`export type` name no code). */
const RELATIVE_IMPORT = /(?:^|\n)\s*(?:import|export)\s(?!type\s)[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"|(?:^|\n)\s*import\s+"(\.{1,2}\/[^"]+)"/g;

/**
 * The roots and every module they import, transitively: a helper outside issuing/ decides a
 * verdict as much as the rule calling it (OUT-008 reads receipts through receipt.ts and
 * checks/signature.ts, OUT-004 sizes through digest.ts and encoding.ts, the normalisation uses
 * strict-json.ts and boundary.ts), so it is digested too.
 */
function rulesCode(): string[] {
  const seen = new Set<string>();
  const pending = rulesRoots();
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!file.endsWith(".ts")) continue;
    for (const m of readFileSync(file, "utf8").matchAll(RELATIVE_IMPORT)) {
      const spec = m[1] ?? m[2];
      const target = join(dirname(file), spec.replace(/\.js$/, ".ts"));
      expect(existsSync(target), `${relative(ROOT, file)} imports ${spec}`).toBe(true);
      pending.push(target);
    }
  }
  return [...seen].sort();
}

function rulesDigest(): string {
  const hash = createHash("sha256");
  for (const file of rulesCode()) {
    const path = relative(ROOT, file);
    // Line endings as committed: a checkout that rewrote them is the same code.
    const text = readFileSync(file, "utf8").replace(/\r\n/g, "\n");
    hash.update(`${path}\n${Buffer.byteLength(text)}\n${text}`);
  }
  return hash.digest("hex");
}

describe("verifier_version names the rules' code", () => {
  it("the current version was released with exactly this code (else bump VERIFIER_VERSION and add it here)", () => {
    const digest = rulesDigest();
    expect(RELEASED[VERIFIER_VERSION], `rules' code is ${digest}: bump VERIFIER_VERSION in worker/protocol/issuing/config.ts and add the new version with this digest`).toBe(digest);
  });

  it("digests every rule module (sixteen rules, their index and types)", () => {
    expect(rulesCode().filter((f) => /\/rules\/(sec|out)-\d{3}\.ts$/.test(f))).toHaveLength(16);
  });

  it("digests the helpers outside issuing/ that a rule's verdict runs through, as the rules import them", () => {
    const files = rulesCode().map((f) => relative(ROOT, f));
    for (const helper of ["worker/protocol/receipt.ts", "worker/protocol/checks/signature.ts", "worker/protocol/digest.ts", "worker/protocol/encoding.ts", "worker/protocol/strict-json.ts", "worker/protocol/boundary.ts", "worker/protocol/issuing/scopes.ts", "worker/protocol/issuing/challenge.ts"]) {
      expect(files, helper).toContain(helper);
    }
  });
});
