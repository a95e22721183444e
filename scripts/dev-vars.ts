import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";

/**
 * Makes .dev.vars hold every variable of .dev.vars.example: copies the example when .dev.vars is
 * missing, else appends the variables it lacks (a checkout updated since its first start).
 * Never changes a value already there. Returns the names it wrote.
 */
export function ensureDevVars(root: string): string[] {
  const devVars = resolve(root, ".dev.vars");
  const example = resolve(root, ".dev.vars.example");
  if (!existsSync(devVars)) {
    copyFileSync(example, devVars);
    return Object.keys(readDevVars(devVars));
  }
  const have = readDevVars(devVars);
  const missing = Object.entries(readDevVars(example)).filter(([name]) => !(name in have));
  if (missing.length > 0) {
    const text = readFileSync(devVars, "utf8");
    appendFileSync(devVars, (text.endsWith("\n") || text === "" ? "" : "\n") + missing.map(([k, v]) => `${k}=${v}\n`).join(""));
  }
  return missing.map(([name]) => name);
}

/** The `NAME=value` lines of a dotenv file (comments and blank lines skipped). */
export function readDevVars(path: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = /^\s*([A-Z0-9_]+)\s*=\s*(.*?)\s*$/.exec(line);
    if (m) vars[m[1]] = m[2];
  }
  return vars;
}
