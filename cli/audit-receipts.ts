/**
 * `npm run audit:receipts`: builds the 16 scenario receipts, runs the mutation audit, prints a
 * table per plane and writes vectors/ec-agent/audit-report.json. Exits 1 unless every mutation
 * is rejected (structural ones by their targeted check) with no false rejection.
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
const { structural, lexical_adversarial: lex, binding } = report;
console.log(`## Structural mutations (${structural.rejected}/${structural.trials} rejected, ${structural.rejected_by_target} by the targeted check)\n`);
console.log(table(report.classes.filter((c) => c.plane === "structural"), true));
console.log(`\n## Lexical-adversarial mutation\n\n${lex.trials} contradiction swaps: lexical predicate accepted ${lex.lexical_accepted}, guard rejected ${lex.guard_rejected} (the unmutated claims pass the guard: ${lex.clean_claims_guard_passed}/${lex.trials}).`);
console.log(`\n## Claim-binding audit (${binding.detected}/${binding.mutations} detected; ${binding.false_rejections} false rejections of ${binding.clean} clean receipts)\n`);
console.log(table(report.classes.filter((c) => c.plane === "binding"), false));
console.log(`\nPublished reference: ${report.published_reference.detected}/${report.published_reference.binding_mutations} detected, false-rejection rate ${report.published_reference.false_rejection_rate}. Report: ${path}`);

const perfect =
  structural.rejected_by_target === structural.trials &&
  binding.detected === binding.mutations &&
  binding.false_rejections === 0 &&
  lex.lexical_accepted === lex.trials &&
  lex.guard_rejected === lex.trials;
process.exit(perfect ? 0 : 1);
