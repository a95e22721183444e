#!/usr/bin/env node
// The `countersign` command: loads the TypeScript CLI through tsx (installed by `npm ci`).
import { register } from "tsx/esm/api";

// A reader that stops early (`countersign verify --lines … | head -1`) closes the pipe: the
// remaining output has nowhere to go, and that is no failure of the command. Unhandled, the
// EPIPE was a stack trace and exit 1 ("invalid") for a file of valid calls.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code !== "EPIPE") throw err;
  });
}

register();
const { main } = await import("./countersign.ts");
process.exitCode = await main(process.argv.slice(2));
