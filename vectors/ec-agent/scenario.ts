/**
 * The audit scenario over vectors/ec-agent/corpus.json, written by hand; everything else is
 * derived from it. Four action-level runs emit four claims each, every claim citing declared
 * spans; one final-only run takes its claim from the answer and anchors it there; one run
 * exhausts its budget before any claim.
 */
import corpusJson from "./corpus.json" with { type: "json" };
import type { Corpus } from "../../worker/protocol/ec/corpus.js";

export const corpus = corpusJson as Corpus;
export const POLICY_ID = "policy/grounded-answers/v3";
export const FINAL_ONLY_POLICY_ID = "policy/final-only/v1";

export interface ClaimSpec {
  claim_id: string;
  claim: string;
  /** [doc_id, span_id] of each cited span, in citation order. */
  spans: [string, string][];
  /** [word in the claim, its contradiction-pair partner]: the lexical-adversarial swap. */
  swap: [string, string];
}

export interface RunSpec {
  run_id: string;
  record_id: string;
  seed: number;
  /** "action-level": a claim_emission event per claim; "final-only": one claim taken from the answer. */
  mode: "action-level" | "final-only";
  /** Extra events before a claim's retrieval, to exercise the closed action types. */
  noise?: Record<string, "tool_error+retry" | "empty_observation" | "access_denied">;
  claims: ClaimSpec[];
  /** Set when the run ran out of calls before it could claim anything: documents it still retrieved. */
  exhausted?: { retrieved: string[]; required_claims: string[] };
}

export const runs: RunSpec[] = [
  {
    run_id: "run-001",
    record_id: "rec-harbour",
    seed: 13,
    mode: "action-level",
    noise: { c2: "tool_error+retry" },
    claims: [
      { claim_id: "c1", claim: "The harbour museum opened after the flood of 1910.", spans: [["harbour-history", "s1"]], swap: ["opened", "closed"] },
      { claim_id: "c2", claim: "Margarethe Vogel chaired the restoration committee.", spans: [["harbour-history", "s2"]], swap: ["chaired", "advised"] },
      { claim_id: "c3", claim: "Visitors climb the red iron stair to the lantern room.", spans: [["harbour-history", "s3"]], swap: ["red", "blue"] },
      { claim_id: "c4", claim: "The yellow roses bloom after the first week of June.", spans: [["garden-notes", "s1"]], swap: ["after", "before"] },
    ],
  },
  {
    run_id: "run-002",
    record_id: "rec-rail",
    seed: 13,
    mode: "action-level",
    claims: [
      { claim_id: "c1", claim: "The night train from Aldergrove reached the coast in March 1923.", spans: [["rail-log", "s1"]], swap: ["reached", "left"] },
      { claim_id: "c2", claim: "The train departed before dawn with 212 passengers aboard.", spans: [["rail-log", "s2"]], swap: ["departed", "arrived"] },
      { claim_id: "c3", claim: "The signal crews found the new brakes reliable in the wet season.", spans: [["rail-log", "s3"]], swap: ["reliable", "unreliable"] },
      { claim_id: "c4", claim: "Tom\u00e1s Reyes advised the trustees to replace the black gates with white ones.", spans: [["garden-notes", "s2"]], swap: ["advised", "chaired"] },
    ],
  },
  {
    run_id: "run-003",
    record_id: "rec-expedition",
    seed: 17,
    mode: "action-level",
    noise: { c2: "empty_observation", c3: "access_denied" },
    claims: [
      { claim_id: "c1", claim: "The greenhouse closed for repairs in 1987.", spans: [["garden-notes", "s3"]], swap: ["closed", "opened"] },
      { claim_id: "c2", claim: "The survey party arrived at the glacier after four days.", spans: [["expedition", "s1"]], swap: ["arrived", "departed"] },
      { claim_id: "c3", claim: "Zoe\u0308 Lindqvist kept a blue notebook of every crossing.", spans: [["expedition", "s2"]], swap: ["blue", "green"] },
      { claim_id: "c4", claim: "The old maps proved unreliable above 3,000 metres.", spans: [["expedition", "s3"]], swap: ["unreliable", "reliable"] },
    ],
  },
  {
    run_id: "run-004",
    record_id: "rec-market",
    seed: 23,
    mode: "action-level",
    claims: [
      { claim_id: "c1", claim: "The green stalls sell bread, cheese and apples from the valley.", spans: [["market", "s2"]], swap: ["green", "yellow"] },
      { claim_id: "c2", claim: "In 2004 the market moved after the bridge was rebuilt.", spans: [["market", "s1"], ["market", "s3"]], swap: ["after", "before"] },
      { claim_id: "c3", claim: "The observatory dome was painted white in 1956.", spans: [["observatory", "s1"]], swap: ["white", "black"] },
      { claim_id: "c4", claim: "Ines Okafor chaired the board that approved the new telescope.", spans: [["observatory", "s2"]], swap: ["chaired", "advised"] },
    ],
  },
  {
    run_id: "run-005",
    record_id: "rec-telescope",
    seed: 23,
    mode: "final-only",
    claims: [{ claim_id: "c1", claim: "The instrument arrived in October", spans: [["observatory", "s3"]], swap: ["arrived", "departed"] }],
  },
  {
    run_id: "run-006",
    record_id: "rec-fishmongers",
    seed: 17,
    mode: "action-level",
    claims: [],
    exhausted: { retrieved: ["market", "harbour-history"], required_claims: ["c1"] },
  },
];
