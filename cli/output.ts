/**
 * Files a command writes (keys, reports): all of them or none. An output path that cannot be
 * written is the caller's to fix (a usage problem, exit 2), answered in one line naming the path,
 * and leaves nothing half-written behind. Kept free of the Worker's code, so `npm run replay`
 * loads only what it needs.
 */
import { chmodSync, closeSync, lstatSync, openSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** An output path that cannot be written: a usage problem, its message one line naming the path. */
export class OutputError extends Error {}

export interface OutputFile {
  path: string;
  text: string;
  /** File mode (e.g. 0o600 for a secret); default 0o666 less the umask. */
  mode?: number;
}

const reason = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/**
 * Writes each file to a temporary sibling first, then renames them all into place: a path whose
 * directory is missing or unwritable, or that names a directory, fails before any target is
 * touched (an existing file, with --force, keeps its old content). Throws OutputError.
 */
export function writeOutputs(files: OutputFile[]): void {
  for (const f of files) {
    if (f.path === "") throw new OutputError("an output path must not be empty");
    let isDir = false;
    try {
      isDir = statSync(f.path).isDirectory();
    } catch {
      /* absent (or unreadable): the staging write below answers for the directory */
    }
    if (isDir) throw new OutputError(`cannot write ${f.path}: it is a directory`);
  }
  const staged: { temp: string; path: string }[] = [];
  const discard = () => {
    for (const s of staged) rmSync(s.temp, { force: true });
  };
  for (const f of files) {
    // Short and fixed in length whatever the target's name: a temporary name that grew with it
    // would exceed the file-name limit (255 bytes) for a target name that itself fits.
    const temp = join(dirname(f.path), `.countersign-${process.pid}-${crypto.randomUUID().slice(0, 8)}.tmp`);
    let fd: number | undefined;
    try {
      fd = openSync(temp, "wx", f.mode ?? 0o666);
      staged.push({ temp, path: f.path });
      writeFileSync(fd, f.text);
      if (f.mode !== undefined) chmodSync(temp, f.mode);
    } catch (err) {
      discard();
      throw new OutputError(`cannot write ${f.path}: ${reason(err)}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  for (const [i, s] of staged.entries()) {
    try {
      renameSync(s.temp, s.path);
    } catch (err) {
      for (const rest of staged.slice(i)) rmSync(rest.temp, { force: true });
      throw new OutputError(`cannot write ${s.path}: ${reason(err)}`);
    }
  }
}

/**
 * Refuses an output path whose directory entry is one of the files the command read (whatever
 * the spelling of either path, an input read through a link included): `replay B --out B` wrote
 * the report over the bundle, the evidence the report is about, and left nothing to replay
 * again. An output that is a link to an input is not refused: writeOutputs replaces the link.
 */
export function refuseOverwritingInput(out: string, inputs: string[]): void {
  let target;
  try {
    target = lstatSync(out);
  } catch {
    return; // absent: nothing to lose
  }
  for (const input of inputs) {
    if (input === "-") continue;
    try {
      const read = statSync(input);
      if (read.dev === target.dev && read.ino === target.ino) throw new OutputError(`cannot write ${out}: it is the input ${input}, which the report would replace`);
    } catch (err) {
      if (err instanceof OutputError) throw err;
    }
  }
}
