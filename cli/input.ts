/**
 * Files a command reads: UTF-8 text, strictly. `readFileSync(path, "utf8")` replaces every byte
 * that is not UTF-8 with U+FFFD and goes on, so a Command or call holding a Latin-1 byte was
 * signed, or judged valid, for text that was not in the file, where the service refuses the same
 * bytes (`MALFORMED_REQUEST`, invalid_utf8). Kept free of the Worker's code, like output.ts.
 */
import { readFileSync } from "node:fs";

// As the service decodes a body: fatal on a bad sequence, a byte-order mark kept (and so refused by strict JSON).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A file's text, or standard input's for "-"; throws an Error whose message says why (an errno code, or not valid UTF-8). */
export function readUtf8(path: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path === "-" ? 0 : path);
  } catch (err) {
    throw new Error((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new Error("not valid UTF-8");
  }
}
