/**
 * The work one EC-Agent call may ask for. Per-document, per-span and per-trace work is done once
 * per call (see `CorpusMemo` and `prepareTrace`), so what is left superlinear in the body's size
 * is capped here: the references of one receipt (each costs the claim's tokenisation and a
 * look-up in its run's trace), the code points of distinct cited text (a 200-byte reference can
 * select a whole document), and the receipts of one execution row and the events of one trace
 * (bounded so a row's work stays proportionate to what a policy run produces). The HTTP routes
 * refuse a call over a cap with 400 `EC_LIMIT_EXCEEDED`; the CLI and the audit run uncapped.
 */
export const EC_LIMITS = {
  /** Evidence references in one receipt. */
  evidence_per_receipt: 64,
  /** Documents in one corpus: each is hashed on its own (its version, the corpus digest), ~25 µs apiece here however short. */
  corpus_documents: 4096,
  /** Code points of distinct cited spans selected in one call (the 2 MiB body cap's worth). */
  cited_code_points: 2 * 1024 * 1024,
  /** Receipts in one execution row of a bundle. */
  receipts_per_run: 256,
  /** Events in one trace (a verify call's events, a row's events or its rerun's). */
  events_per_trace: 4096,
  /**
   * Events in all the traces of one call (a bundle's rows and their reruns). A well-formed event is
   * at least 155 bytes of JSON, so a 2 MiB body holds fewer than this; an ill-formed one (`{}`, 3
   * bytes) is a dozen schema problems, and rows of them cost 20 ms and 6 MB each.
   */
  events_per_call: 16_384,
  /** Code points of one claim: a claim is a sentence or a few, and each span it meets reads its atoms (and answers them). */
  claim_code_points: 16_384,
  /** Spans one `/v1/support/evaluate` call judges a claim against. */
  support_spans: 64,
  /**
   * Code units of cited span read by the lexical predicate in one call: each distinct (claim, span)
   * pair scans the span once (a pair met again costs nothing), so many claims over one long span
   * would otherwise read it many times.
   */
  // Half of what the two scans may read together: at ~5 ns a code unit at worst, ~0.35 s a call.
  support_scan_code_units: 32 * 1024 * 1024,
  /**
   * Code units of answer text read to find receipts' claims in the answer they are anchored to, in
   * one call: each distinct (claim, answer) pair scans the answer once, so a row of receipts with
   * distinct short claims over one long answer would otherwise read it once per receipt.
   */
  answer_scan_code_units: 32 * 1024 * 1024,
  /**
   * Bytes of one answer as JSON (UTF-8, escapes included): per reference or per span an answer
   * restates the tokens and atoms it compared, and a bundle's report restates run ids, so a short
   * body would otherwise be answered many times its size.
   */
  answer_bytes: 8 * 1024 * 1024,
} as const;
export type EcLimits = { readonly [K in keyof typeof EC_LIMITS]: number };

/** A call asked for more work than a cap allows; the routes answer 400 EC_LIMIT_EXCEEDED. */
export class EcLimitError extends Error {
  constructor(
    readonly limit: keyof typeof EC_LIMITS,
    detail: string,
  ) {
    super(detail);
    this.name = "EcLimitError";
  }
}

/** Refuses a claim longer than the cap, counted in code points as the receipt's `claim_code_points` counts. */
export function claimWithin(claim: string, limits: Pick<EcLimits, "claim_code_points">): void {
  // A code point is at least one UTF-16 unit: the cheap test first.
  if (claim.length <= limits.claim_code_points) return;
  let n = 0;
  for (const _ of claim) if (++n > limits.claim_code_points) throw new EcLimitError("claim_code_points", `a claim of more than ${limits.claim_code_points} code points; a claim is a sentence or a few`);
}

/**
 * Bytes of a string in JSON: UTF-8, with its quotes and the escapes of `"`, `\\` and control
 * characters; a lone surrogate is written as a `\uXXXX` escape (6 bytes), a pair as 4 bytes.
 */
function jsonStringBytes(text: string, budget: number): number {
  let n = 2;
  for (let i = 0; i < text.length && n <= budget; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += c < 0x20 ? 6 : c === 0x22 || c === 0x5c ? 2 : c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 6 : 3;
  }
  return n;
}

/**
 * Refuses an answer whose JSON would be more than `limits.answer_bytes` bytes: every string and
 * key as serialisation writes it (UTF-8, escapes included; a value shared by several places
 * counts at each), with the punctuation around them. The walk stops as soon as the cap is passed,
 * so it costs at most the cap, and it runs before anything is serialised.
 */
export function answerWithin(answer: unknown, limits: Pick<EcLimits, "answer_bytes">): void {
  let left = limits.answer_bytes;
  const stack: unknown[] = [answer];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") left -= jsonStringBytes(v, left + 1);
    else if (Array.isArray(v)) {
      left -= v.length + 2;
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === "object") {
      left -= 2;
      for (const [k, item] of Object.entries(v)) {
        left -= jsonStringBytes(k, left + 1) + 2;
        stack.push(item);
      }
    } else left -= 24;
    if (left < 0) throw new EcLimitError("answer_bytes", `the answer would be more than ${limits.answer_bytes} bytes of JSON (long text restated for every reference, span or claim); send less`);
  }
}
