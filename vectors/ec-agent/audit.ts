/**
 * The mutation audit of EC-Agent receipts: structural mutations (each must be rejected by the
 * check that targets it), the lexical-adversarial mutation (the lexical predicate accepts it,
 * the guard rejects its contradiction), and the claim-binding audit of cross-object
 * substitutions, with the unmutated receipts counted for false rejections. Deterministic.
 */
import { corpusDigest, type Corpus } from "../../worker/protocol/ec/corpus.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { verifyEcReceipt, type EcReceipt, type IntegrityReason } from "../../worker/protocol/ec/receipt.js";
import { guardSupport, lexicalSupport } from "../../worker/protocol/ec/support.js";
import type { BuiltReceipt, BuiltRun } from "./build.js";
import { corpus } from "./scenario.js";

interface Trial {
  receipt: unknown;
  events: unknown;
  corpus: Corpus;
}

export interface ClassRow {
  plane: "structural" | "binding";
  class: string;
  trials: number;
  rejected: number;
  accepted: number;
  rate: number;
  /** Structural only: trials rejected by the reason code the class targets. */
  rejected_by_target?: number;
  target?: string;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const flipHex = (d: string) => d.slice(0, -1) + (d.endsWith("0") ? "1" : "0");

interface Structural {
  name: string;
  target: (r: EcReceipt) => IntegrityReason;
  mutate: (r: EcReceipt, events: TraceEvent[]) => Trial;
}

const STRUCTURAL: Structural[] = [
  { name: "quote", target: () => "QUOTE_MISMATCH", mutate: (r, events) => { const m = clone(r); m.evidence[0].quote = m.evidence[0].quote.replace(/\w/, (c) => (c === "x" ? "y" : "x")); return { receipt: m, events, corpus }; } },
  { name: "offset", target: () => "SPAN_HASH_MISMATCH", mutate: (r, events) => { const m = clone(r); m.evidence[0].start += 1; return { receipt: m, events, corpus }; } },
  { name: "source text", target: () => "CORPUS_DIGEST_MISMATCH", mutate: (r, events) => { const c = clone(corpus); const doc = c[r.evidence[0].doc_id]; doc.text = doc.text.replace("the", "teh"); return { receipt: r, events, corpus: c }; } },
  { name: "doc id", target: () => "SOURCE_UNKNOWN", mutate: (r, events) => { const m = clone(r); m.evidence[0].doc_id = `${m.evidence[0].doc_id}-copy`; return { receipt: m, events, corpus }; } },
  { name: "event order", target: () => "EXECUTION_DIGEST_MISMATCH", mutate: (r, events) => { const e = clone(events); [e[0], e[1]] = [e[1], e[0]]; return { receipt: r, events: e, corpus }; } },
  { name: "event attribute", target: () => "EXECUTION_DIGEST_MISMATCH", mutate: (r, events) => { const e = clone(events); e[0].output = `${e[0].output} (edited)`; return { receipt: r, events: e, corpus }; } },
  { name: "evidence removal", target: (r) => (r.evidence.length > 1 ? "JOINT_DIGEST_MISMATCH" : "EVIDENCE_EMPTY"), mutate: (r, events) => { const m = clone(r); m.evidence.pop(); return { receipt: m, events, corpus }; } },
  { name: "oracle-field injection", target: () => "EVENT_SCHEMA_INVALID", mutate: (r, events) => { const e = clone(events) as unknown as Record<string, unknown>[]; e[r.emission_anchor].gold_supported = true; return { receipt: r, events: e, corpus }; } },
  { name: "receipt digest", target: () => "JOINT_DIGEST_MISMATCH", mutate: (r, events) => { const m = clone(r); m.joint_digest = flipHex(m.joint_digest); return { receipt: m, events, corpus }; } },
];

type Binding = { name: string; variants: (x: BuiltReceipt, run: BuiltRun, all: BuiltRun[]) => Trial[] };

const POLICIES = ["policy/grounded-answers/v2", "policy/grounded-answers/v4", "policy/open-answers/v1", "policy/grounded-answers/v3-draft", "policy/Grounded-Answers/v3", "policy/grounded-answers", "policy/grounded-answers/v3/", " policy/grounded-answers/v3", "policy/audit-only/v1"];
const ANSWER_EDITS: ((s: string) => string)[] = [
  (s) => s + ".", (s) => " " + s, (s) => s.slice(0, -1), (s) => s.replace(/^./, (c) => c.toLowerCase()), (s) => s.replace(/ the /, " a "),
  (s) => s.replace(/ (\w+) /, " not $1 "), (s) => s.replace(" ", "  "), (s) => s.replace(/\.$/, "!"), (s) => `${s} ${s.split(". ")[0]}.`,
];

const BINDING: Binding[] = [
  { name: "receipt-claim substitution", variants: (x, run, all) => donors(all, x, 9).map((d) => ({ receipt: { ...x.receipt, claim: d.receipt.claim }, events: run.events, corpus })) },
  {
    name: "claim-anchor displacement",
    variants: (x, run) => {
      const a = x.receipt.emission_anchor;
      const offsets = [1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8, 9, -9, 10, -10].map((d) => a + d).filter((v) => v >= 0);
      return offsets.slice(0, 9).map((anchor) => ({ receipt: { ...x.receipt, emission_anchor: anchor }, events: run.events, corpus }));
    },
  },
  {
    name: "answer-text mutation",
    variants: (x, run) => ANSWER_EDITS.map((edit) => {
      const e = clone(run.events);
      const answer = e.find((ev) => ev.action_type === "answer")!;
      answer.output = edit(answer.output!);
      return { receipt: x.receipt, events: e, corpus };
    }),
  },
  {
    name: "cross-action swap",
    variants: (x, run) => run.receipts.filter((o) => o !== x).flatMap((o) => [
      { receipt: { ...x.receipt, claim_id: o.receipt.claim_id }, events: run.events, corpus },
      { receipt: { ...x.receipt, emission_anchor: o.receipt.emission_anchor }, events: run.events, corpus },
      { receipt: { ...x.receipt, claim_id: o.receipt.claim_id, claim: o.receipt.claim, emission_anchor: o.receipt.emission_anchor }, events: run.events, corpus },
    ]),
  },
  {
    name: "cross-run swap",
    variants: (x, run, all) => all.filter((o) => o !== run).flatMap((o) => [
      { receipt: x.receipt, events: o.events, corpus },
      { receipt: { ...x.receipt, run_id: o.run_id }, events: o.events, corpus },
      { receipt: { ...x.receipt, execution_digest: o.receipts[0].receipt.execution_digest }, events: o.events, corpus },
    ]),
  },
  { name: "evidence transplant", variants: (x, run, all) => donors(all, x, 9).map((d) => ({ receipt: { ...x.receipt, evidence: d.receipt.evidence }, events: run.events, corpus })) },
  {
    name: "execution transplant",
    variants: (x, run, all) => donors(all, x, 15).filter((d) => d.run_id !== x.run_id).slice(0, 9).map((d) => {
      const donorRun = all.find((r) => r.run_id === d.run_id)!;
      return { receipt: { ...x.receipt, execution_digest: d.receipt.execution_digest }, events: donorRun.events, corpus };
    }),
  },
  { name: "cross-policy reassignment", variants: (x, run) => POLICIES.map((policy_id) => ({ receipt: { ...x.receipt, policy_id }, events: run.events, corpus })) },
  {
    name: "source-version substitution",
    variants: (x, run) => {
      const docId = x.receipt.evidence[0].doc_id;
      const variant = (version: string | null, edit: ((t: string) => string) | null): Trial => {
        const c = clone(corpus);
        if (version !== null) c[docId].version = version;
        if (edit) c[docId].text = edit(c[docId].text);
        return { receipt: x.receipt, events: run.events, corpus: c };
      };
      const next = (v: string | undefined) => `v${Number((v ?? "v0").slice(1)) + 1}`;
      const v = corpus[docId].version;
      return [
        variant(next(v), null), variant(`${v}.1`, null), variant("latest", null),
        variant(null, (t) => t.replace(/\.$/, "!")), variant(null, (t) => t.replace(" ", "  ")), variant(null, (t) => `${t} Revised.`),
        variant(next(v), (t) => t.replace(/\.$/, "!")), variant(next(v), (t) => t.toUpperCase()), variant(next(v), (t) => t.replace(/\d/, "9")),
      ];
    },
  },
];

/** The n receipts after x, cycling through all runs. */
function donors(all: BuiltRun[], x: BuiltReceipt, n: number): BuiltReceipt[] {
  const flat = all.flatMap((r) => r.receipts);
  const i = flat.indexOf(x);
  return Array.from({ length: n }, (_, k) => flat[(i + 1 + k) % flat.length]);
}

const swapWord = (text: string, [from, to]: [string, string]) => text.replace(new RegExp(`\\b${from}\\b`), to);
const rate = (n: number, d: number) => (d ? Math.round((n / d) * 10000) / 10000 : 0);

export async function runAudit(built: BuiltRun[]) {
  const classes: ClassRow[] = [];
  const verify = (t: Trial) => verifyEcReceipt(t.receipt, t.corpus, t.events);

  for (const s of STRUCTURAL) {
    let rejected = 0;
    let byTarget = 0;
    const targets = new Set<string>();
    for (const run of built) for (const x of run.receipts) {
      const v = await verify(s.mutate(x.receipt, run.events));
      const target = s.target(x.receipt);
      targets.add(target);
      if (!v.valid) rejected++;
      if ((v.reasons as string[]).includes(target)) byTarget++;
    }
    const trials = built.reduce((n, r) => n + r.receipts.length, 0);
    classes.push({ plane: "structural", class: s.name, trials, rejected, accepted: trials - rejected, rate: rate(rejected, trials), rejected_by_target: byTarget, target: [...targets].sort().join(" or ") });
  }

  let lexicalAccepted = 0;
  let guardRejected = 0;
  let cleanGuardPassed = 0;
  let adversarialTrials = 0;
  for (const run of built) for (const x of run.receipts) {
    const spans = x.spec.spans.map(([, quote]) => quote);
    const adversarial = swapWord(x.spec.claim, x.spec.swap);
    adversarialTrials++;
    if (spans.some((s) => lexicalSupport(adversarial, s).supported)) lexicalAccepted++;
    const guards = spans.map((s) => guardSupport(adversarial, s));
    if (!guards.some((g) => g.passed) && guards.some((g) => g.conflicts.length > 0)) guardRejected++;
    if (spans.some((s) => guardSupport(x.spec.claim, s).passed)) cleanGuardPassed++;
  }

  let clean = 0;
  let falseRejections = 0;
  for (const run of built) for (const x of run.receipts) {
    clean++;
    if (!(await verify({ receipt: x.receipt, events: run.events, corpus })).valid) falseRejections++;
  }
  for (const b of BINDING) {
    let trials = 0;
    let rejected = 0;
    for (const run of built) for (const x of run.receipts) {
      for (const t of b.variants(x, run, built)) {
        trials++;
        if (!(await verify(t)).valid) rejected++;
      }
    }
    classes.push({ plane: "binding", class: b.name, trials, rejected, accepted: trials - rejected, rate: rate(rejected, trials) });
  }

  const structural = classes.filter((c) => c.plane === "structural");
  const binding = classes.filter((c) => c.plane === "binding");
  const sum = (rows: ClassRow[], k: "trials" | "rejected" | "rejected_by_target") => rows.reduce((n, r) => n + (r[k] ?? 0), 0);
  return {
    audit_version: 1,
    generator: "vectors/ec-agent/audit.ts (npm run audit:receipts)",
    corpus_digest: await corpusDigest(corpus),
    receipts: clean,
    structural: { trials: sum(structural, "trials"), rejected: sum(structural, "rejected"), rejected_by_target: sum(structural, "rejected_by_target") },
    lexical_adversarial: { trials: adversarialTrials, lexical_accepted: lexicalAccepted, guard_rejected: guardRejected, clean_claims_guard_passed: cleanGuardPassed },
    binding: { mutations: sum(binding, "trials"), detected: sum(binding, "rejected"), clean, false_rejections: falseRejections, false_rejection_rate: rate(falseRejections, clean) },
    published_reference: { binding_mutations: 1280, detected: 1275, false_rejection_rate: 0.0031 },
    classes,
  };
}

export type AuditReport = Awaited<ReturnType<typeof runAudit>>;
