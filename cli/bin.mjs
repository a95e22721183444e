#!/usr/bin/env node
// The `countersign` command: loads the TypeScript CLI through tsx (installed by `npm ci`).
import { register } from "tsx/esm/api";

// A reader that stops early (`countersign verify --lines … | head -1`) closes the pipe: the
// remaining output has nowhere to go, and that is no failure of the command. Unhandled, the
// EPIPE was a stack trace and exit 1 ("invalid") for a file of valid calls.
// One exception: `relying-parties add|rotate` answers a token shown once, so a reader that stopped
// before it lost the only copy (the old token is refused already): that run fails (exit 1).
let stdoutClosed = false;
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code !== "EPIPE") throw err;
    if (stream === process.stdout) stdoutClosed = true;
  });
}

register();
const { main } = await import("./countersign.ts");
const args = process.argv.slice(2);
const code = await main(args);
// A write's EPIPE is reported asynchronously: let it arrive before judging.
await new Promise((resolve) => process.stdout.write("", resolve));
if (code === 0 && stdoutClosed && args[0] === "relying-parties") {
  process.stderr.write("countersign relying-parties: the answer, with its token, could not be written (standard output was closed); run it again (rotate) to get a token\n");
  process.exitCode = 1;
} else process.exitCode = code;
