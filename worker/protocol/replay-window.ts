/**
 * The strict sequence window of one key (anchors with `sequence_policy: "window"`), IPsec style:
 * the highest sequence seen and a bitmap of the last WINDOW_SIZE sequences below and including
 * it (bit i stands for highest − i).
 */
export const WINDOW_SIZE = 1024;
const MASK = (1n << BigInt(WINDOW_SIZE)) - 1n;

export interface SequenceWindow {
  /** Highest sequence accepted, or -1 before the first. */
  highest: number;
  bitmap: bigint;
}

export const EMPTY_WINDOW: SequenceWindow = { highest: -1, bitmap: 0n };

export type WindowResult =
  | { kind: "fresh"; next: SequenceWindow }
  | { kind: "repeated"; detail: string }
  | { kind: "too_old"; detail: string };

export function admitSequence(w: SequenceWindow, sequence: number): WindowResult {
  if (sequence > w.highest) {
    const shift = sequence - w.highest;
    const bitmap = shift >= WINDOW_SIZE || w.highest < 0 ? 1n : ((w.bitmap << BigInt(shift)) & MASK) | 1n;
    return { kind: "fresh", next: { highest: sequence, bitmap } };
  }
  const age = w.highest - sequence;
  if (age >= WINDOW_SIZE) {
    return { kind: "too_old", detail: `sequence ${sequence} is older than the window (highest ${w.highest}, window ${WINDOW_SIZE})` };
  }
  const bit = 1n << BigInt(age);
  if (w.bitmap & bit) return { kind: "repeated", detail: `sequence ${sequence} was already presented` };
  return { kind: "fresh", next: { highest: w.highest, bitmap: w.bitmap | bit } };
}

export const encodeBitmap = (bitmap: bigint): string => bitmap.toString(16);
export const decodeBitmap = (text: string): bigint => BigInt("0x" + (text || "0"));
