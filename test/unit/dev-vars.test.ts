import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureDevVars } from "../../scripts/dev-vars.js";

describe("npm start's .dev.vars", () => {
  it("is copied from .dev.vars.example when missing, and never overwritten", () => {
    const root = mkdtempSync(join(tmpdir(), "cs-devvars-"));
    writeFileSync(join(root, ".dev.vars.example"), "ADMIN_TOKEN=demo\n");
    expect(ensureDevVars(root)).toBe(true);
    expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("ADMIN_TOKEN=demo\n");
    writeFileSync(join(root, ".dev.vars"), "ADMIN_TOKEN=mine\n");
    expect(ensureDevVars(root)).toBe(false);
    expect(readFileSync(join(root, ".dev.vars"), "utf8")).toBe("ADMIN_TOKEN=mine\n");
  });
});
