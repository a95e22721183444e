/**
 * Files a command reads: UTF-8 text, strictly. `readFileSync(path, "utf8")` replaces every byte
 * that is not UTF-8 with U+FFFD and goes on, so a Command or call holding a Latin-1 byte was
 * signed, or judged valid, for text that was not in the file, where the service refuses the same
 * bytes (`MALFORMED_REQUEST`, invalid_utf8). Kept free of the Worker's code, like output.ts.
 */
import { constants } from "node:buffer";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

// As the service decodes a body: fatal on a bad sequence, a byte-order mark kept (and so refused by strict JSON).
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The most bytes read from one input: the longest string the runtime holds (2^29 − 24 code units
 * on 64-bit Node, about 512 MiB), so no file this CLI could decode is refused. Read whole, an
 * endless source (`/dev/zero`, `yes |`) grew the process until the system killed it, and a larger
 * file (a 1 GiB one) was read whole and then answered "not valid UTF-8".
 */
export const MAX_INPUT_BYTES: number = constants.MAX_STRING_LENGTH;

const CHUNK = 1 << 20;

/**
 * A file's text, or standard input's for "-"; throws an Error whose message says why (an errno
 * code, larger than `max` bytes, or not valid UTF-8). A regular file over `max` is refused from
 * its size, before it is read; any other source is read up to `max` bytes and refused past them.
 */
export function readUtf8(path: string, max: number = MAX_INPUT_BYTES): string {
  const tooLarge = () => new Error(`larger than ${max} bytes, the most an input may hold`);
  const chunks: Buffer[] = [];
  let total = 0;
  let fd: number | undefined;
  try {
    fd = path === "-" ? 0 : openSync(path, "r");
    const st = fstatSync(fd);
    if (st.isFile() && st.size > max) throw tooLarge();
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, 0, Math.min(CHUNK, max + 1 - total), null);
      } catch (err) {
        // Standard input left non-blocking by whoever handed it over: wait for it, as a blocking read does.
        if ((err as NodeJS.ErrnoException).code === "EAGAIN") {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
          continue;
        }
        throw err;
      }
      if (n === 0) break;
      total += n;
      if (total > max) throw tooLarge();
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    }
  } catch (err) {
    throw new Error((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  } finally {
    if (fd !== undefined && fd !== 0) closeSync(fd);
  }
  try {
    return utf8.decode(Buffer.concat(chunks, total));
  } catch {
    throw new Error("not valid UTF-8");
  }
}
