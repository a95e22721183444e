/**
 * A stacked bar chart as an inline SVG string: one bar per minute, one coloured segment per
 * series, drawn on the server so the page needs no script. Stacking keeps every series visible
 * where a line chart would draw equal counts on top of each other. Every label is escaped;
 * colours come from a fixed palette by series position.
 */
import { escapeHtml } from "./escape.js";

/** Colours of the series, in order; the legend's swatches use the same index (class `c<i>`). */
export const PALETTE = ["#2e7d32", "#c62828", "#1565c0", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#9e9d24", "#455a64", "#d84315", "#283593"];

export interface Series {
  name: string;
  /** One count per minute, oldest first; every series of a chart has the same length. */
  points: number[];
}

export interface ChartSpec {
  title: string;
  /** Unix seconds of the first point. */
  from: number;
  series: Series[];
}

const W = 720;
const H = 220;
const LEFT = 48;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 28;

/** The smallest of 1, 2, 5 × 10^k at or above `n` (at least 1), so the axis reads in round numbers. */
export function niceCeiling(n: number): number {
  if (n <= 1) return 1;
  const base = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * base >= n) return m * base;
  return 10 * base;
}

const hhmm = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString().slice(11, 16);

export function stackedBarChart(spec: ChartSpec): string {
  const length = Math.max(1, ...spec.series.map((s) => s.points.length));
  const sums = Array.from({ length }, (_, k) => spec.series.reduce((a, s) => a + (s.points[k] ?? 0), 0));
  const top = niceCeiling(Math.max(0, ...sums));
  const plotW = W - LEFT - RIGHT;
  const plotH = H - TOP - BOTTOM;
  const slot = plotW / length;
  const barW = Math.max(1, slot * 0.8);
  const x = (k: number) => LEFT + k * slot + (slot - barW) / 2;
  const y = (n: number) => TOP + plotH - (n * plotH) / top;
  const parts: string[] = [];
  for (const tick of [0, top / 2, top]) {
    parts.push(`<line x1="${LEFT}" x2="${W - RIGHT}" y1="${y(tick)}" y2="${y(tick)}" stroke="#ccc" stroke-width="1"/>`);
    parts.push(`<text x="${LEFT - 6}" y="${y(tick) + 4}" text-anchor="end" font-size="11" fill="#555">${tick}</text>`);
  }
  for (let k = 0; k < length; k += 15) {
    parts.push(`<text x="${(x(k) + barW / 2).toFixed(1)}" y="${H - 8}" text-anchor="middle" font-size="11" fill="#555">${hhmm(spec.from + k * 60)}</text>`);
  }
  const base = new Array<number>(length).fill(0);
  spec.series.forEach((s, i) => {
    const total = s.points.reduce((a, b) => a + b, 0);
    const bars: string[] = [];
    s.points.forEach((n, k) => {
      if (n <= 0) return;
      const y0 = y(base[k]);
      const y1 = y(base[k] + n);
      base[k] += n;
      bars.push(`<rect x="${x(k).toFixed(1)}" y="${y1.toFixed(1)}" width="${barW.toFixed(1)}" height="${(y0 - y1).toFixed(1)}"><title>${escapeHtml(s.name)} ${hhmm(spec.from + k * 60)}: ${n}</title></rect>`);
    });
    parts.push(`<g data-series="${escapeHtml(s.name)}" data-total="${total}" fill="${PALETTE[i % PALETTE.length]}">${bars.join("")}</g>`);
  });
  const label = `${escapeHtml(spec.title)}, per minute, UTC`;
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" role="img" aria-label="${label}"><title>${label}</title>${parts.join("")}</svg>`;
}
