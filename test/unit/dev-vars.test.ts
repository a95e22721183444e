import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureDevVars, readDevVars } from "../../scripts/dev-vars.js";

describe("npm start's .dev.vars", () => {
  it("is copied from .dev.vars.example when missing, and no value of it is ever overwritten", () => {
    const root = mkdtempSync(join(tmpdir(), "cs-devvars-"));
    writeFileSync(join(root, ".dev.vars.example"), "# demo\nADMIN_TOKEN=demo\n");
    expect(ensureDevVars(root)).toEqual(["ADMIN_TOKEN"]);
    expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("# demo\nADMIN_TOKEN=demo\n");
    writeFileSync(join(root, ".dev.vars"), "ADMIN_TOKEN=mine");
    expect(ensureDevVars(root)).toEqual([]);
    expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("ADMIN_TOKEN=mine");
  });

  it("gains the variables the example added since, keeping its own values", () => {
    const root = mkdtempSync(join(tmpdir(), "cs-devvars-"));
    writeFileSync(join(root, ".dev.vars"), "ADMIN_TOKEN=mine");
    writeFileSync(join(root, ".dev.vars.example"), "ADMIN_TOKEN=demo\nSIGNING_KID=demo-1\n");
    expect(ensureDevVars(root)).toEqual(["SIGNING_KID"]);
    expect(readDevVars(join(root, ".dev.vars"))).toEqual({ ADMIN_TOKEN: "mine", SIGNING_KID: "demo-1" });
  });

  it("reads values as wrangler does (dotenv): quotes removed, export allowed, an unquoted value ends at #", () => {
    const root = mkdtempSync(join(tmpdir(), "cs-devvars-"));
    // Quoted, wrangler serves ADMIN_TOKEN without its quotes; npm start presented it with them
    // and stopped with 401 "pinning the demo issuer failed" (rv-83).
    writeFileSync(join(root, ".dev.vars"), [
      'ADMIN_TOKEN="demo-admin-token"',
      "DEMO_RP_TOKEN='demo-relying-party-token-0123456789abcdef'",
      "export INTAKE_TOKEN=demo-intake-token",
      "SIGNING_KID=countersign-demo-1   # the kid",
      "  LEDGER_SHARD_KEY = spaced  ",
      "# COMMENTED=1",
      "",
    ].join("\r\n"));
    expect(readDevVars(join(root, ".dev.vars"))).toEqual({
      ADMIN_TOKEN: "demo-admin-token",
      DEMO_RP_TOKEN: "demo-relying-party-token-0123456789abcdef",
      INTAKE_TOKEN: "demo-intake-token",
      SIGNING_KID: "countersign-demo-1",
      LEDGER_SHARD_KEY: "spaced",
    });
  });
});
