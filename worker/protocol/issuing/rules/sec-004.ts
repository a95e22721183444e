import { urlHost } from "../hosts.js";
import { BLOCKED_ABSOLUTE_PATH } from "../scopes.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/**
 * Where a path containing a `..` segment lands, or null when it has none or never climbs out of
 * where it starts. An absolute path is resolved from `/`; a relative one is judged only if it
 * climbs above its own start, and then what follows is read from `/` (the cwd is unknown, so the
 * worst case is assumed). `\` counts as a separator and `%2e`/`%2f` are decoded first.
 */
export function traversalTarget(path: string): string | null {
  let p = path.replace(/%2e/gi, ".").replace(/%2f/gi, "/").replace(/%5c/gi, "\\").replace(/\\/g, "/");
  if (p.startsWith("~/")) p = p.slice(1);
  const segments = p.split("/");
  if (!segments.includes("..")) return null;
  const absolute = p.startsWith("/");
  const stack: string[] = [];
  let escaped = false;
  for (const seg of segments) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") {
      if (stack.length > 0) stack.pop();
      else escaped = true;
    } else stack.push(seg);
  }
  return absolute || escaped ? "/" + stack.join("/") : null;
}

export const isBlockedPath = (path: string): boolean =>
  BLOCKED_ABSOLUTE_PATH.some((b) => path === b || path.startsWith(b + "/") || (b.startsWith("/.") && (path.includes(b + "/") || path.endsWith(b))));

export const SEC_004: InputRule = {
  name: "SEC-004",
  trigger: "a path argument contains a `..` traversal and resolves to a BLOCKED_ABSOLUTE_PATH or below it",
  scope: "string arguments of any tool that are not absolute URLs",
  judge({ command }) {
    for (const s of argumentStrings(command.params)) {
      if (urlHost(s) !== null) continue;
      const target = traversalTarget(s);
      if (target !== null && isBlockedPath(target)) return deny(`SEC-004: path traversal reaches ${target}`);
    }
    return allow();
  },
};
