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

/**
 * The variables of a dotenv file, read as wrangler reads .dev.vars (dotenv's parse, which wrangler
 * bundles): `export ` allowed before a name, a value in '…', "…" or `…` taken without its quotes
 * ("…" with \n and \r expanded), and an unquoted value ending at a `#` comment. Read otherwise
 * (quotes kept), a `ADMIN_TOKEN="…"` that wrangler serves unquoted made npm start present the
 * token with its quotes and stop, 401, "pinning the demo issuer failed".
 */
export function readDevVars(path: string): Record<string, string> {
  return parseDotenv(readFileSync(path, "utf8"));
}

export function parseDotenv(src: string): Record<string, string> {
  const LINE = /(?:^|^)\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*?|:\s+?)(\s*'(?:\\'|[^'])*'|\s*"(?:\\"|[^"])*"|\s*`(?:\\`|[^`])*`|[^#\r\n]+)?\s*(?:#.*)?(?:$|$)/gm;
  const vars: Record<string, string> = {};
  const lines = src.replace(/\r\n?/gm, "\n");
  for (let m = LINE.exec(lines); m !== null; m = LINE.exec(lines)) {
    let value = (m[2] ?? "").trim();
    const quote = value[0];
    value = value.replace(/^(['"`])([\s\S]*)\1$/gm, "$2");
    if (quote === '"') value = value.replace(/\\n/g, "\n").replace(/\\r/g, "\r");
    vars[m[1]] = value;
  }
  return vars;
}
