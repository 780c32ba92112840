/**
 * A Bloom filter over (app, uuid) keys, whose bit positions ClickHouse computes the same way
 * (`murmurHash3_32` and `xxHash32` of `app_id || '\n' || uuid`: the first picks a block of 512 bits,
 * a cache line, and both pick the 9 bits in it by double hashing, so a look-up costs one cache miss
 * instead of nine), so the engine can
 * fill it from the dedupe index in one aggregate (FILTER_BITS_SQL) and JavaScript adds the keys it
 * stores afterwards. "Not in the filter" means "never stored"; "in it" means "look it up": the
 * events writer asks the index only about those.
 *
 * Layers: the first is sized for the index when the filter was filled (at least 4M keys, 7 MB: at
 * 1M it filled within 20 s of ingestion and layers multiplied); when a layer holds its capacity a
 * new one of twice the size takes the new keys. A key is looked up in every layer, so their false
 * positives add up: with each at 1 % a process that had stored 10M keys since it started sent
 * 2.8 % of new keys to the index, and the look-ups were most of what the events writer's batches
 * came to cost more as the run went on. Each new layer therefore aims at half the false positives
 * of the one before (a scalable Bloom filter, Almeida et al. 2007): one hash and ~1.6 bits per key
 * more each time, and the sum stays under 0.5 % for good (at 10M keys 0.47 %, 1.13 % from a
 * first layer at 1 %).
 */
const HASHES = 9
/**
 * ~0.25 % false positives with 9 hashes in blocks of 512 bits (blocking costs ~10 % more bits;
 * full 4M-key layers measure ~0.35 %). Every false positive is a key the events writer looks up
 * (~15 us of engine time per part of the index it may be in: ~120 us at 10M keys), while a bit
 * per key more costs 1.25 MB per million keys: at 1 % (10.5 bits, 7 hashes) the false
 * positives were ~550 of each 50,000-event write's look-ups at 10M keys, now ~230.
 */
const BITS_PER_KEY = 13.7
/** What halving a layer's false positives costs in bits per key (log2(2) / ln 2, +10 % blocked). */
const BITS_PER_HALVING = 1.6
const BLOCK_BITS = 512
export const MIN_CAPACITY = 4_000_000

interface Layer {
  words: Uint32Array
  blocks: number
  capacity: number
  count: number
  hashes: number
}

export class KeyFilter {
  private readonly layers: Layer[] = []
  private scratch: Buffer = Buffer.allocUnsafe(256)

  constructor(capacity = MIN_CAPACITY) {
    this.layers.push(layer(capacity, 0))
  }

  /** Blocks of the first layer (FILTER_BITS_SQL's {blocks}). */
  get firstLayerBlocks(): number {
    return this.layers[0]!.blocks
  }

  /** Keys added (including those set from the engine's bits: `fill`'s count). */
  get size(): number {
    return this.layers.reduce((n, l) => n + l.count, 0)
  }

  /** ORs 32-bit words into the first layer (from FILTER_BITS_SQL) and counts `keys` in it. */
  fill(words: Iterable<[index: number, bits: number]>, keys: number): void {
    const first = this.layers[0]!
    for (const [index, bits] of words) first.words[index]! |= bits
    first.count += keys
  }

  add(app: string, uuid: string): void {
    this.hash(app, uuid)
    this.addHashed(this.h1, this.h2)
  }

  mightContain(app: string, uuid: string): boolean {
    this.hash(app, uuid)
    return this.mightContainHashed(this.h1, this.h2)
  }

  /**
   * Adds the key `app`, `uuid` unless the filter may hold it already; true when it was added (so
   * the key was surely never added before). One hash for both questions: the events writer asks
   * this of every key of a batch.
   */
  addIfAbsent(app: string, uuid: string): boolean {
    this.hash(app, uuid)
    return this.addIfAbsentHashed(this.h1, this.h2)
  }

  /** addIfAbsent of a key hashed beforehand (`keyHashes`, on the CPU pool). */
  addIfAbsentHashed(h1: number, h2: number): boolean {
    if (this.mightContainHashed(h1, h2)) return false
    this.addHashed(h1, h2)
    return true
  }

  private addHashed(h1: number, h2: number): void {
    let current = this.layers[this.layers.length - 1]!
    if (current.count >= current.capacity)
      this.layers.push((current = layer(current.capacity * 2, this.layers.length)))
    const base = (h1 % current.blocks) * BLOCK_BITS
    const step = (h1 >>> 9) | 1
    for (let i = 0; i < current.hashes; i++) {
      const bit = base + ((h2 + i * step) % BLOCK_BITS)
      current.words[bit >>> 5]! |= 1 << (bit & 31)
    }
    current.count++
  }

  private mightContainHashed(h1: number, h2: number): boolean {
    for (const l of this.layers) if (has(l, h1, h2)) return true
    return false
  }

  private h1 = 0
  private h2 = 0

  /** Sets h1 and h2 for the key `app`, a newline, `uuid`. */
  private hash(app: string, uuid: string): void {
    this.scratch = keyBytes(this.scratch, app, uuid)
    const n = keyLength
    this.h1 = murmurHash3x86(this.scratch, n)
    this.h2 = xxHash32(this.scratch, n)
  }
}

/**
 * The filter's two hashes of each key (`apps[i]`, `uuids[i]`; with `appIndex`, `apps[appIndex[i]]`),
 * h1 then h2 per key: computed where the events are parsed (the CPU pool), so the thread that
 * screens a batch only tests bits.
 */
export function keyHashes(
  apps: readonly string[],
  uuids: readonly string[],
  appIndex?: ArrayLike<number>,
): Uint32Array {
  const out = new Uint32Array(uuids.length * 2)
  let scratch: Buffer = Buffer.allocUnsafe(256)
  for (let i = 0; i < uuids.length; i++) {
    scratch = keyBytes(scratch, apps[appIndex ? appIndex[i]! : i]!, uuids[i]!)
    out[2 * i] = murmurHash3x86(scratch, keyLength)
    out[2 * i + 1] = xxHash32(scratch, keyLength)
  }
  return out
}

// The length of the key keyBytes wrote last (a module variable: no object per key).
export let keyLength = 0

/** The key's UTF-8 bytes (`app`, a newline, `uuid`) in `scratch`, or in a bigger buffer it returns. */
export function keyBytes(scratch: Buffer, app: string, uuid: string): Buffer {
  const most = (app.length + uuid.length) * 3 + 1
  const b = scratch.length < most ? Buffer.allocUnsafe(most * 2) : scratch
  let n = writeAscii(b, 0, app)
  b[n++] = 0x0a
  keyLength = writeAscii(b, n, uuid)
  return b
}

/** Writes `s` as UTF-8 at `at` (ASCII byte by byte, the usual case), returns the end. */
function writeAscii(b: Buffer, at: number, s: string): number {
  const n = s.length
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c > 0x7f) return at + b.write(s, at, 'utf8')
    b[at + i] = c
  }
  return at + n
}

/** Layer `level` (0: the first, whose bits FILTER_BITS_SQL computes) at 0.25 % / 2^level false positives. */
function layer(capacity: number, level: number): Layer {
  const blocks = Math.ceil((capacity * (BITS_PER_KEY + level * BITS_PER_HALVING)) / BLOCK_BITS)
  return {
    words: new Uint32Array((blocks * BLOCK_BITS) / 32),
    blocks,
    capacity,
    count: 0,
    hashes: HASHES + level,
  }
}

function has(l: Layer, h1: number, h2: number): boolean {
  const base = (h1 % l.blocks) * BLOCK_BITS
  const step = (h1 >>> 9) | 1
  for (let i = 0; i < l.hashes; i++) {
    const bit = base + ((h2 + i * step) % BLOCK_BITS)
    if ((l.words[bit >>> 5]! & (1 << (bit & 31))) === 0) return false
  }
  return true
}

/**
 * The first layer's bits for every key of the dedupe index, as (word index, 32 bits) rows: the
 * same positions as KeyFilter's, so ClickHouse builds the filter without sending any key.
 * Parameters: {blocks:UInt64} (firstLayerBlocks).
 */
export const FILTER_BITS_SQL = `
  SELECT toUInt32(intDiv(bit, 32)) AS word, groupBitOr(bitShiftLeft(toUInt32(1), toUInt8(bit % 32))) AS mask
  FROM (
    SELECT (h1 % {blocks:UInt64}) * ${BLOCK_BITS} + (h2 + toUInt64(i) * bitOr(bitShiftRight(h1, 9), 1)) % ${BLOCK_BITS} AS bit
    FROM (
      SELECT toUInt64(murmurHash3_32(k)) AS h1, toUInt64(xxHash32(k)) AS h2
      FROM (SELECT concat(app_id, '\\n', uuid) AS k FROM event_uuid_index)
    )
    ARRAY JOIN range(${HASHES}) AS i
  )
  GROUP BY word`

/** MurmurHash3 x86 32-bit, seed 0: ClickHouse's murmurHash3_32 of a String. */
export function murmurHash3x86(b: Uint8Array, n = b.length): number {
  let h = 0
  const blocks = n & ~3
  for (let i = 0; i < blocks; i += 4) {
    let k = b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)
    k = Math.imul(k, 0xcc9e2d51)
    k = (k << 15) | (k >>> 17)
    k = Math.imul(k, 0x1b873593)
    h ^= k
    h = (h << 13) | (h >>> 19)
    h = (Math.imul(h, 5) + 0xe6546b64) | 0
  }
  let k = 0
  const rest = n & 3
  if (rest === 3) k ^= b[blocks + 2]! << 16
  if (rest >= 2) k ^= b[blocks + 1]! << 8
  if (rest >= 1) {
    k ^= b[blocks]!
    k = Math.imul(k, 0xcc9e2d51)
    k = (k << 15) | (k >>> 17)
    k = Math.imul(k, 0x1b873593)
    h ^= k
  }
  h ^= n
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

const P1 = 2654435761
const P2 = 2246822519
const P3 = 3266489917
const P4 = 668265263
const P5 = 374761393
const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r))
const u32 = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)

/** xxHash32, seed 0: ClickHouse's xxHash32 of a String. */
export function xxHash32(b: Uint8Array, n = b.length): number {
  let i = 0
  let h: number
  if (n >= 16) {
    let v1 = (P1 + P2) | 0
    let v2 = P2 | 0
    let v3 = 0
    let v4 = -P1 | 0
    const limit = n - 16
    do {
      v1 = Math.imul(rotl((v1 + Math.imul(u32(b, i), P2)) | 0, 13), P1)
      v2 = Math.imul(rotl((v2 + Math.imul(u32(b, i + 4), P2)) | 0, 13), P1)
      v3 = Math.imul(rotl((v3 + Math.imul(u32(b, i + 8), P2)) | 0, 13), P1)
      v4 = Math.imul(rotl((v4 + Math.imul(u32(b, i + 12), P2)) | 0, 13), P1)
      i += 16
    } while (i <= limit)
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0
  } else h = P5
  h = (h + n) | 0
  for (; i + 4 <= n; i += 4) h = Math.imul(rotl((h + Math.imul(u32(b, i), P3)) | 0, 17), P4)
  for (; i < n; i++) h = Math.imul(rotl((h + Math.imul(b[i]!, P5)) | 0, 11), P1)
  h ^= h >>> 15
  h = Math.imul(h, P2)
  h ^= h >>> 13
  h = Math.imul(h, P3)
  h ^= h >>> 16
  return h >>> 0
}
