/**
 * The audit scenario: four agent runs over vectors/ec-agent/corpus.json, four claims each, every
 * claim citing the spans it rests on. Written by hand; everything else is derived from it.
 */
import corpusJson from "./corpus.json" with { type: "json" };
import type { Corpus } from "../../worker/protocol/ec/corpus.js";

export const corpus: Corpus = corpusJson;
export const POLICY_ID = "policy/grounded-answers/v3";

export interface ClaimSpec {
  claim_id: string;
  claim: string;
  /** [doc_id, quote] of each cited span, in citation order. */
  spans: [string, string][];
  /** [word in the claim, its contradiction-pair partner]: the lexical-adversarial swap. */
  swap: [string, string];
}

export interface RunSpec {
  run_id: string;
  /** Extra events before a claim's retrieval, to exercise the closed action types. */
  noise?: Record<string, "tool_error+retry" | "empty_observation" | "access_denied">;
  claims: ClaimSpec[];
}

export const runs: RunSpec[] = [
  {
    run_id: "run-001",
    noise: { c2: "tool_error+retry" },
    claims: [
      { claim_id: "c1", claim: "The harbour museum opened after the flood of 1910.", spans: [["harbour-history", "The harbour museum opened after the flood of 1910"]], swap: ["opened", "closed"] },
      { claim_id: "c2", claim: "Margarethe Vogel chaired the restoration committee.", spans: [["harbour-history", "Its first curator, Margarethe Vogel, chaired the restoration committee for eleven years."]], swap: ["chaired", "advised"] },
      { claim_id: "c3", claim: "Visitors climb the red iron stair to the lantern room.", spans: [["harbour-history", "Visitors still climb the red iron stair to the lantern room."]], swap: ["red", "blue"] },
      { claim_id: "c4", claim: "The yellow roses bloom after the first week of June.", spans: [["garden-notes", "In the walled garden the yellow roses bloom after the first week of June."]], swap: ["after", "before"] },
    ],
  },
  {
    run_id: "run-002",
    claims: [
      { claim_id: "c1", claim: "The night train from Aldergrove reached the coast in March 1923.", spans: [["rail-log", "The night train from Aldergrove reached the coast at 6:40 on a Tuesday in March 1923."]], swap: ["reached", "left"] },
      { claim_id: "c2", claim: "The train departed before dawn with 212 passengers aboard.", spans: [["rail-log", "It departed again before dawn with 212 passengers aboard."]], swap: ["departed", "arrived"] },
      { claim_id: "c3", claim: "The signal crews found the new brakes reliable in the wet season.", spans: [["rail-log", "The signal crews reported that the new brakes were reliable in the wet season."]], swap: ["reliable", "unreliable"] },
      { claim_id: "c4", claim: "Tom\u00e1s Reyes advised the trustees to replace the black gates with white ones.", spans: [["garden-notes", "The gardener, Tom\u00e1s Reyes, advised the trustees to replace the black gates with white ones."]], swap: ["advised", "chaired"] },
    ],
  },
  {
    run_id: "run-003",
    noise: { c2: "empty_observation", c3: "access_denied" },
    claims: [
      { claim_id: "c1", claim: "The greenhouse closed for repairs in 1987.", spans: [["garden-notes", "The greenhouse closed for repairs in 1987"]], swap: ["closed", "opened"] },
      { claim_id: "c2", claim: "The survey party arrived at the glacier after four days.", spans: [["expedition", "The survey party left Base Camp on Friday and arrived at the glacier after four days."]], swap: ["arrived", "departed"] },
      { claim_id: "c3", claim: "Zoe\u0308 Lindqvist kept a blue notebook of every crossing.", spans: [["expedition", "Its leader, Zoe\u0308 Lindqvist, kept a blue notebook of every crossing \u{1F4D3}."]], swap: ["blue", "green"] },
      { claim_id: "c4", claim: "The old maps proved unreliable above 3,000 metres.", spans: [["expedition", "The old maps proved unreliable above 3,000 metres"]], swap: ["unreliable", "reliable"] },
    ],
  },
  {
    run_id: "run-004",
    claims: [
      { claim_id: "c1", claim: "The green stalls sell bread, cheese and apples from the valley.", spans: [["market", "The green stalls sell bread, cheese and apples from the valley."]], swap: ["green", "yellow"] },
      { claim_id: "c2", claim: "In 2004 the market moved after the bridge was rebuilt.", spans: [["market", "Every Saturday the market on the Lindenstra\u00dfe opens at seven"], ["market", "In 2004 the market moved after the bridge was rebuilt"]], swap: ["after", "before"] },
      { claim_id: "c3", claim: "The observatory dome was painted white in 1956.", spans: [["observatory", "The observatory dome was painted white in 1956"]], swap: ["white", "black"] },
      { claim_id: "c4", claim: "Ines Okafor chaired the board that approved the new telescope.", spans: [["observatory", "Astronomer Ines Okafor chaired the board that approved the new telescope."]], swap: ["chaired", "advised"] },
    ],
  },
];
