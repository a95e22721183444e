/**
 * A seeded pseudo-random source (the C library's linear congruential generator): the property
 * tests that compare a linear reading with the expression it replaced draw the same inputs on every
 * run. `next` is in [0, 1); `text` is up to `max - 1` letters drawn from `alphabet`.
 */
export function seeded(seed: number) {
  const next = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 2 ** 24;
  const text = (alphabet: readonly string[], max: number) => Array.from({ length: Math.floor(next() * max) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
  return { next, text };
}
