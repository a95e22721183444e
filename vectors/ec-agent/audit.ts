/**
 * The mutation audit of EC-Agent receipts, run the way the paper describes its own (our
 * corpus, our sizes, so our figures stand beside the paper's, not for them):
 *  - structural mutations, each expected to be stopped by the check that targets it: text
 *    changed inside the cited span, offsets driven to every offset code, identity, trace and
 *    evidence-presence mutations, an oracle field injected into an event;
 *  - the lexical-adversarial mutation on whole receipts: the claim swapped for its
 *    contradiction and honestly re-receipted, so integrity holds and the lexical predicate
 *    accepts it; then the guard judges it;
 *  - the claim-binding audit of cross-object substitutions, with the unmutated receipts
 *    counted for false rejections and the resolution that count allows;
 *  - the remove-one-property ablation: each verifier property disabled in turn, every class
 *    rerun, and the classes that then get through listed.
 * Deterministic.
 */
import { versionOf, corpusDigest, type Corpus } from "../../worker/protocol/ec/corpus.js";
import type { TraceEvent } from "../../worker/protocol/ec/events.js";
import { INTEGRITY_PROPERTIES, issueEcReceipt, verifyEcReceipt, type EcReceipt, type IntegrityProperty, type IntegrityReason } from "../../worker/protocol/ec/receipt.js";
import { guardSupport } from "../../worker/protocol/ec/support.js";
import { codePoints } from "../../worker/protocol/ec/text.js";
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
  /** Structural only: trials rejected with the reason code the class targets. */
  rejected_by_target?: number;
  target?: string;
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const flipHex = (d: string) => d.slice(0, -1) + (d.endsWith("0") ? "1" : "0");
const rate = (n: number, d: number) => (d ? Math.round((n / d) * 10000) / 10000 : 0);

/** Replaces one code point inside [start, end) of a document with another letter. */
function editInside(c: Corpus, docId: string, start: number, end: number): Corpus {
  const out = clone(c);
  const points = codePoints(out[docId].text);
  const at = start + Math.floor((end - start) / 2);
  points[at] = points[at] === "x" ? "y" : "x";
  out[docId].text = points.join("");
  return out;
}

interface Structural {
  name: string;
  target: (r: EcReceipt) => IntegrityReason;
  mutate: (r: EcReceipt, events: TraceEvent[]) => Promise<Trial> | Trial;
}

const withRef = (r: EcReceipt, edit: (ref: Record<string, unknown>) => void, events: TraceEvent[]): Trial => {
  const m = clone(r);
  edit(m.evidence[0] as unknown as Record<string, unknown>);
  return { receipt: m, events, corpus };
};

const STRUCTURAL: Structural[] = [
  { name: "quote", target: () => "QUOTE_MISMATCH", mutate: (r, ev) => withRef(r, (x) => (x.quote = (x.quote as string).replace(/\w/, (c) => (c === "x" ? "y" : "x"))), ev) },
  { name: "text inside the cited span", target: () => "SPAN_HASH_MISMATCH", mutate: (r, ev) => ({ receipt: r, events: ev, corpus: editInside(corpus, r.evidence[0].doc_id, r.evidence[0].start, r.evidence[0].end) }) },
  { name: "offset off by one", target: () => "SPAN_HASH_MISMATCH", mutate: (r, ev) => withRef(r, (x) => (x.end = (x.end as number) - 1), ev) },
  { name: "offset not an integer", target: () => "OFFSET_NOT_INTEGER", mutate: (r, ev) => withRef(r, (x) => (x.start = (x.start as number) + 0.5), ev) },
  { name: "offset negative", target: () => "OFFSET_NEGATIVE", mutate: (r, ev) => withRef(r, (x) => (x.start = -1), ev) },
  { name: "offsets reversed", target: () => "OFFSET_REVERSED", mutate: (r, ev) => withRef(r, (x) => ([x.start, x.end] = [x.end, x.start]), ev) },
  { name: "offset out of range", target: () => "OFFSET_OUT_OF_RANGE", mutate: (r, ev) => withRef(r, (x) => (x.end = codePoints(corpus[x.doc_id as string].text).length + 5), ev) },
  { name: "doc id", target: () => "SOURCE_UNKNOWN", mutate: (r, ev) => withRef(r, (x) => (x.doc_id = `${x.doc_id}-copy`), ev) },
  { name: "span id", target: () => "INVALID_REFERENCE", mutate: (r, ev) => withRef(r, (x) => (x.span_id = `${x.span_id}-invented`), ev) },
  { name: "document version", target: () => "SOURCE_VERSION_MISMATCH", mutate: async (r, ev) => { const v = await versionOf(`${corpus[r.evidence[0].doc_id].text} (v0)`); return withRef(r, (x) => (x.doc_version = v), ev); } },
  { name: "access state", target: () => "ACCESS_STATE_MISMATCH", mutate: (r, ev) => { const c = clone(corpus); c[r.evidence[0].doc_id].access = "revoked"; return { receipt: r, events: ev, corpus: c }; } },
  { name: "event order", target: () => "EXECUTION_DIGEST_MISMATCH", mutate: (r, ev) => { const e = clone(ev); [e[0], e[1]] = [e[1], e[0]]; return { receipt: r, events: e, corpus }; } },
  { name: "event attribute", target: () => "EXECUTION_DIGEST_MISMATCH", mutate: (r, ev) => { const e = clone(ev); e[0].output = `${e[0].output} (edited)`; return { receipt: r, events: e, corpus }; } },
  { name: "evidence removal", target: (r) => (r.evidence.length > 1 ? "JOINT_DIGEST_MISMATCH" : "EVIDENCE_EMPTY"), mutate: (r, ev) => { const m = clone(r); m.evidence.pop(); return { receipt: m, events: ev, corpus }; } },
  { name: "oracle-field injection", target: () => "EVENT_SCHEMA_INVALID", mutate: (r, ev) => { const e = clone(ev) as unknown as Record<string, unknown>[]; e[r.emission_anchor].gold_supported = true; return { receipt: r, events: e, corpus }; } },
  { name: "receipt digest", target: () => "JOINT_DIGEST_MISMATCH", mutate: (r, ev) => { const m = clone(r); m.joint_digest = flipHex(m.joint_digest); return { receipt: m, events: ev, corpus }; } },
];

type Binding = { name: string; variants: (x: BuiltReceipt, run: BuiltRun, all: BuiltRun[]) => Promise<Trial[]> | Trial[] };

const POLICIES = ["policy/grounded-answers/v2", "policy/grounded-answers/v4", "policy/open-answers/v1", "policy/grounded-answers/v3-draft", "policy/Grounded-Answers/v3", "policy/grounded-answers", "policy/grounded-answers/v3/", " policy/grounded-answers/v3", "policy/audit-only/v1"];
const ANSWER_EDITS: ((s: string) => string)[] = [
  (s) => s + ".", (s) => " " + s, (s) => s.slice(0, -1), (s) => s.replace(/^./, (c) => c.toLowerCase()), (s) => s.replace(/ the /, " a ") + " ",
  (s) => s.replace(/ (\w+) /, " not $1 "), (s) => s.replace(" ", "  "), (s) => s.replace(/\.?$/, "!"), (s) => `${s} ${s.split(". ")[0]}.`,
];
const SOURCE_EDITS: ((t: string, other: string) => string)[] = [
  (t) => `${t} Revised.`, (t) => `Revised. ${t}`, (t) => t.slice(0, -1), (t) => t.toUpperCase(), (t) => t.replace(" ", "  "),
  (t) => `${t}${t}`, (t) => t.replace(" ", "\u00a0"), (t) => t.replace(/.$/u, "!"), (_t, other) => other,
];

/** The n receipts after x, cycling through all runs. */
function donors(all: BuiltRun[], x: BuiltReceipt, n: number): BuiltReceipt[] {
  const flat = all.flatMap((r) => r.receipts);
  const i = flat.indexOf(x);
  return Array.from({ length: n }, (_, k) => flat[(i + 1 + k) % flat.length]);
}

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
    variants: (x, run, all) => all.filter((o) => o !== run && o.receipts.length > 0).slice(0, 3).flatMap((o) => [
      { receipt: x.receipt, events: o.events, corpus },
      { receipt: { ...x.receipt, run_id: o.run_id }, events: o.events, corpus },
      { receipt: { ...x.receipt, execution_digest: o.receipts[0].receipt.execution_digest }, events: o.events, corpus },
    ]),
  },
  { name: "evidence transplant", variants: (x, run, all) => donors(all, x, 9).map((d) => ({ receipt: { ...x.receipt, evidence: d.receipt.evidence }, events: run.events, corpus })) },
  {
    name: "execution transplant",
    variants: (x, run, all) => donors(all, x, 17).filter((d) => d.run_id !== x.run_id).slice(0, 9).map((d) => {
      const donorRun = all.find((r) => r.run_id === d.run_id)!;
      return { receipt: { ...x.receipt, execution_digest: d.receipt.execution_digest }, events: donorRun.events, corpus };
    }),
  },
  { name: "cross-policy reassignment", variants: (x, run) => POLICIES.map((policy_id) => ({ receipt: { ...x.receipt, policy_id }, events: run.events, corpus })) },
  {
    name: "source-version substitution",
    variants: (x, run) => {
      const docId = x.receipt.evidence[0].doc_id;
      const other = Object.keys(corpus).find((d) => d !== docId)!;
      return SOURCE_EDITS.map((edit) => {
        const c = clone(corpus);
        c[docId].text = edit(c[docId].text, corpus[other].text);
        return { receipt: x.receipt, events: run.events, corpus: c };
      });
    },
  },
];

const swapWord = (text: string, [from, to]: [string, string]) => text.replace(new RegExp(`\\b${from}\\b`), to);

export async function runAudit(built: BuiltRun[]) {
  const digests = new WeakMap<Corpus, Promise<string>>();
  const digestOf = (c: Corpus) => digests.get(c) ?? (digests.set(c, corpusDigest(c)), digests.get(c)!);
  const verify = async (t: Trial, disabled?: ReadonlySet<IntegrityProperty>) => verifyEcReceipt(t.receipt, t.corpus, t.events, { corpusDigest: await digestOf(t.corpus), disabled });
  const receipts = built.flatMap((run) => run.receipts.map((x) => ({ run, x })));

  // Every trial of every class, materialised once so the ablation reruns exactly the same ones.
  const structuralTrials = new Map<string, { trial: Trial; target: IntegrityReason }[]>();
  for (const s of STRUCTURAL) structuralTrials.set(s.name, await Promise.all(receipts.map(async ({ run, x }) => ({ trial: await s.mutate(x.receipt, run.events), target: s.target(x.receipt) }))));
  const bindingTrials = new Map<string, Trial[]>();
  for (const b of BINDING) bindingTrials.set(b.name, (await Promise.all(receipts.map(({ run, x }) => b.variants(x, run, built)))).flat());

  const classes: ClassRow[] = [];
  for (const [name, trials] of structuralTrials) {
    let rejected = 0;
    let byTarget = 0;
    for (const { trial, target } of trials) {
      const v = await verify(trial);
      if (!v.valid) rejected++;
      if ((v.reasons as string[]).includes(target)) byTarget++;
    }
    const targets = [...new Set(trials.map((t) => t.target))].sort().join(" or ");
    classes.push({ plane: "structural", class: name, trials: trials.length, rejected, accepted: trials.length - rejected, rate: rate(rejected, trials.length), rejected_by_target: byTarget, target: targets });
  }

  let clean = 0;
  let falseRejections = 0;
  for (const { run, x } of receipts) {
    clean++;
    if (!(await verify({ receipt: x.receipt, events: run.events, corpus })).valid) falseRejections++;
  }
  for (const [name, trials] of bindingTrials) {
    let rejected = 0;
    for (const t of trials) if (!(await verify(t)).valid) rejected++;
    classes.push({ plane: "binding", class: name, trials: trials.length, rejected, accepted: trials.length - rejected, rate: rate(rejected, trials.length) });
  }

  // The lexical-adversarial mutation on whole receipts: the policy emits the swapped claim and receipts it honestly.
  let verifierAccepted = 0;
  let guardRejected = 0;
  let cleanGuardPassed = 0;
  const overRejections: { id: string; reasons: string[]; conflicts: [string, string][]; missing_atoms: string[] }[] = [];
  for (const { run, x } of receipts) {
    const adversarial = swapWord(x.spec.claim, x.spec.swap);
    const events = clone(run.events).map((e) => (e.output === x.spec.claim ? { ...e, output: adversarial } : e));
    const answer = events.find((e) => e.action_type === "answer")!;
    answer.output = answer.output!.replace(x.spec.claim, adversarial);
    const receipt = await issueEcReceipt({ ...x.receipt, claim: adversarial, corpus, events });
    const v = await verify({ receipt, events, corpus });
    if (v.valid && v.support.supported === true) verifierAccepted++;
    const spans = v.support.evaluated ? x.spec.spans.map(([doc, span]) => codePoints(corpus[doc].text).slice(corpus[doc].spans![span].start, corpus[doc].spans![span].end).join("")) : [];
    if (!spans.some((s) => guardSupport(adversarial, s).passed)) guardRejected++;
    const cleanGuards = spans.map((s) => guardSupport(x.spec.claim, s));
    if (cleanGuards.some((g) => g.passed)) cleanGuardPassed++;
    else overRejections.push({ id: x.id, reasons: [...new Set(cleanGuards.flatMap((g) => g.reasons))], conflicts: cleanGuards.flatMap((g) => g.conflicts), missing_atoms: cleanGuards.flatMap((g) => g.missing_atoms) });
  }

  // Remove one property at a time and rerun every class: which mutations get through now?
  const ablation = [];
  for (const property of INTEGRITY_PROPERTIES) {
    const disabled = new Set<IntegrityProperty>([property]);
    const through: { class: string; accepted: number; trials: number; detection: number }[] = [];
    const all: [string, Trial[]][] = [...[...structuralTrials].map(([n, ts]) => [n, ts.map((t) => t.trial)] as [string, Trial[]]), ...bindingTrials];
    for (const [name, trials] of all) {
      let accepted = 0;
      for (const t of trials) if ((await verify(t, disabled)).valid) accepted++;
      if (accepted > 0) through.push({ class: name, accepted, trials: trials.length, detection: rate(trials.length - accepted, trials.length) });
    }
    let cleanRejected = 0;
    for (const { run, x } of receipts) if (!(await verify({ receipt: x.receipt, events: run.events, corpus }, disabled)).valid) cleanRejected++;
    ablation.push({ disabled: property, classes_getting_through: through, clean_rejected: cleanRejected });
  }

  const structural = classes.filter((c) => c.plane === "structural");
  const binding = classes.filter((c) => c.plane === "binding");
  const sum = (rows: ClassRow[], k: "trials" | "rejected" | "rejected_by_target") => rows.reduce((n, r) => n + (r[k] ?? 0), 0);
  return {
    audit_version: 2,
    generator: "vectors/ec-agent/audit.ts (npm run audit:receipts)",
    corpus_digest: await corpusDigest(corpus),
    receipts: clean,
    structural: { classes: structural.length, trials: sum(structural, "trials"), rejected: sum(structural, "rejected"), rejected_by_target: sum(structural, "rejected_by_target") },
    lexical_adversarial: {
      trials: receipts.length,
      verifier_accepted: verifierAccepted,
      guard_rejected: guardRejected,
      clean_claims_guard_passed: cleanGuardPassed,
      clean_claims_guard_rejected: overRejections,
    },
    binding: {
      mutations: sum(binding, "trials"),
      detected: sum(binding, "rejected"),
      clean,
      false_rejections: falseRejections,
      false_rejection_rate: rate(falseRejections, clean),
      /** The smallest non-zero rate this many clean receipts can show: one false rejection. */
      false_rejection_resolution: rate(1, clean),
    },
    ablation,
    paper: {
      note: "the paper's figures over its own fixed corpus; ours are a separate experiment on a different corpus and size, not a reproduction",
      structural: { trials: 144, rejected: 144, receipts: 16, classes: 9 },
      lexical_adversarial: { trials: 16, accepted: 16 },
      binding: { mutations: 1280, detected: 1275, detection_rate: 0.9961, false_rejection_rate: 0.0031 },
      ablation_targeted_detection: [0.0156, 0.0625],
    },
    classes,
  };
}

export type AuditReport = Awaited<ReturnType<typeof runAudit>>;
