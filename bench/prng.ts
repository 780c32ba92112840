/**
 * A small seeded PRNG (mulberry32): the bench's generated load is the same for the same seed, so
 * two runs (two commits) are measured on the same bodies.
 */
export type Random = () => number

/** mulberry32: 32-bit state, uniform floats in [0, 1). */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** An integer in [min, max] (both included). */
export function int(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1))
}

export function pick<T>(random: Random, items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from an empty list')
  return items[Math.floor(random() * items.length)]!
}

/** Pick by weight: `[[value, weight], ...]`. */
export function weighted<T>(random: Random, items: readonly (readonly [T, number])[]): T {
  let total = 0
  for (const [, w] of items) total += w
  let r = random() * total
  for (const [value, w] of items) {
    r -= w
    if (r < 0) return value
  }
  const last = items[items.length - 1]
  if (!last) throw new Error('weighted pick from an empty list')
  return last[0]
}

/** `n` lowercase hex digits. */
export function hex(random: Random, n: number): string {
  let out = ''
  while (out.length < n)
    out += Math.floor(random() * 0x100000000)
      .toString(16)
      .padStart(8, '0')
  return out.slice(0, n)
}

/** A derived seed, so each generator (customers, bodies, profiles) has a stream of its own. */
export function deriveSeed(seed: number, label: string): number {
  let h = (seed ^ 0x811c9dc5) >>> 0
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0
  return h
}
