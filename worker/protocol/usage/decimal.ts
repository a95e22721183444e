/**
 * Money as decimal strings: non-negative, plain notation ("12", "0.0035"), never a float and never
 * an exponent, so "1.50" and "1.5" are the same amount and 0.1 + 0.2 is exactly 0.3. Arithmetic
 * is on BigInt with a decimal scale; nothing here ever goes through a JavaScript number.
 */

/** Plain non-negative decimal: no sign, no exponent, no leading zeros, no bare point; at most 64 characters. */
export const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
export const MAX_DECIMAL_LENGTH = 64;

export const isDecimal = (value: unknown): value is string => typeof value === "string" && value.length <= MAX_DECIMAL_LENGTH && DECIMAL.test(value);

interface Scaled {
  units: bigint;
  scale: number;
}

function scaled(text: string): Scaled {
  if (!isDecimal(text)) throw new RangeError(`not a plain decimal: ${JSON.stringify(text)}`);
  const [whole, fraction = ""] = text.split(".");
  return { units: BigInt(whole + fraction), scale: fraction.length };
}

function format({ units, scale }: Scaled): string {
  const digits = units.toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

/** The canonical form of a decimal string: no trailing fractional zeros ("1.50" → "1.5", "2.0" → "2"). */
export const normalizeDecimal = (text: string): string => format(scaled(text));

/** Exact equality of two decimal strings. */
export const decimalEquals = (a: string, b: string): boolean => normalizeDecimal(a) === normalizeDecimal(b);

/** Σ count × rate / divisor, exact, where each rate is a decimal string and `divisor` a power of ten. */
export function sumOfProducts(terms: readonly { count: number; rate: string }[], divisorPowerOfTen: number): string {
  let scale = divisorPowerOfTen;
  for (const t of terms) scale = Math.max(scale, scaled(t.rate).scale + divisorPowerOfTen);
  let total = 0n;
  for (const t of terms) {
    if (!Number.isSafeInteger(t.count) || t.count < 0) throw new RangeError("a count must be a non-negative safe integer");
    const r = scaled(t.rate);
    total += BigInt(t.count) * r.units * 10n ** BigInt(scale - r.scale - divisorPowerOfTen);
  }
  return format({ units: total, scale });
}
