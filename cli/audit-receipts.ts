/**
 * `npm run audit:receipts`: builds the scenario receipts, runs the mutation audit, prints a
 * table per plane, the lexical-adversarial result, the false-rejection rate with its
 * resolution and the ablation, beside the paper's figures, and writes
 * vectors/ec-agent/audit-report.json. Exits 1 unless every structural mutation is rejected by
 * its targeted check, every binding mutation is detected, no clean receipt is rejected, and
 * every lexical-adversarial receipt passes integrity and the lexical predicate (as the paper
 * shows) and is then rejected by the guard.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runAudit, type ClassRow } from "../vectors/ec-agent/audit.js";
import { buildRuns } from "../vectors/ec-agent/build.js";

const report = await runAudit(await buildRuns());
const path = fileURLToPath(new URL("../vectors/ec-agent/audit-report.json", import.meta.url));
writeFileSync(path, JSON.stringify(report, null, 2) + "\n");

const table = (rows: ClassRow[], withTarget: boolean) => [
  `| class | trials | rejected | accepted | rate |${withTarget ? " by targeted check | target |" : ""}`,
  `|---|---:|---:|---:|---:|${withTarget ? "---:|---|" : ""}`,
  ...rows.map((r) => `| ${r.class} | ${r.trials} | ${r.rejected} | ${r.accepted} | ${r.rate} |${withTarget ? ` ${r.rejected_by_target} | ${r.target} |` : ""}`),
].join("\n");
const { structural, lexical_adversarial: lex, binding, paper } = report;
console.log(`## Structural mutations (${structural.rejected}/${structural.trials} rejected, ${structural.rejected_by_target} by the targeted check; paper: ${paper.structural.rejected}/${paper.structural.trials})\n`);
console.log(table(report.classes.filter((c) => c.plane === "structural"), true));
console.log(
  `\n## Lexical-adversarial mutation on whole receipts\n\n${lex.trials} contradiction swaps, each re-receipted: integrity valid and lexically supported ${lex.verifier_accepted} (paper: ${paper.lexical_adversarial.accepted}/${paper.lexical_adversarial.trials} accepted); then rejected by the guard ${lex.guard_rejected}.` +
    ` Unmutated claims passing the guard: ${lex.clean_claims_guard_passed}/${lex.trials}` +
    (lex.clean_claims_guard_rejected.length ? ` (over-rejected: ${lex.clean_claims_guard_rejected.map((o) => `${o.id} ${o.conflicts.map((c) => c.join("/")).join(", ") || o.missing_atoms.join(", ")}`).join("; ")}).` : "."),
);
console.log(
  `\n## Claim-binding audit (${binding.detected}/${binding.mutations} detected; paper: ${paper.binding.detected}/${paper.binding.mutations})\n\n` +
    `False rejections: ${binding.false_rejections} of ${binding.clean} clean receipts, rate ${binding.false_rejection_rate} at a resolution of ${binding.false_rejection_resolution} (one rejection); paper: ${paper.binding.false_rejection_rate}.\n`,
);
console.log(table(report.classes.filter((c) => c.plane === "binding"), false));
console.log("\n## Remove-one-property ablation: what gets through with one check off\n");
console.log("| property off | classes getting through (accepted/trials) | clean rejected |\n|---|---|---:|");
for (const a of report.ablation) console.log(`| ${a.disabled} | ${a.classes_getting_through.map((c) => `${c.class} ${c.accepted}/${c.trials}`).join("; ") || "none: another check still stops every mutation"} | ${a.clean_rejected} |`);
console.log(`\n${paper.note}. Report: ${path}`);

const perfect =
  structural.rejected_by_target === structural.trials &&
  binding.detected === binding.mutations &&
  binding.false_rejections === 0 &&
  lex.verifier_accepted === lex.trials &&
  lex.guard_rejected === lex.trials;
process.exit(perfect ? 0 : 1);
