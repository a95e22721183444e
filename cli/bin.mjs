#!/usr/bin/env node
// The `countersign` command: loads the TypeScript CLI through tsx (installed by `npm ci`).
import { register } from "tsx/esm/api";

register();
const { main } = await import("./countersign.ts");
process.exitCode = await main(process.argv.slice(2));
