import { copyFileSync, existsSync } from "node:fs";
import { resolve } from "node:path";

/** Copies .dev.vars.example to .dev.vars when .dev.vars is missing; never overwrites. True when it copied. */
export function ensureDevVars(root: string): boolean {
  const devVars = resolve(root, ".dev.vars");
  if (existsSync(devVars)) return false;
  copyFileSync(resolve(root, ".dev.vars.example"), devVars);
  return true;
}
