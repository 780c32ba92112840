/**
 * What the import processor keeps of a round's rows while it fills it, in typed arrays reused from
 * round to round. A round lives about a second, long enough for the young generation of the
 * JavaScript heap to move what it holds to the old one: kept as an object and a customer string
 * per row, each round left ~3 MB of garbage there, and the heap grew by up to 60 MB between two
 * major collections of a 1M-row import (docs/imports.md, "Speed").
 */

/**
 * The customers of a round, as 32-bit hashes of their ids in an open-addressing table. `has` may
 * answer yes for a customer the round does not hold (two ids of one hash): the processor then
 * starts a new round early, which is always allowed; it never answers no for one it holds.
 */
export class RoundCustomers {
  private table = new Uint32Array(1 << 16)
  private count = 0

  has(customer: string): boolean {
    const hash = customerHash(customer)
    const mask = this.table.length - 1
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const held = this.table[at]!
      if (held === 0) return false
      if (held === hash) return true
    }
  }

  add(customer: string): void {
    if ((this.count + 1) * 2 > this.table.length) this.grow()
    this.put(customerHash(customer))
  }

  clear(): void {
    this.table.fill(0)
    this.count = 0
  }

  private put(hash: number): void {
    const mask = this.table.length - 1
    let at = hash & mask
    for (; this.table[at] !== 0; at = (at + 1) & mask) if (this.table[at] === hash) return
    this.table[at] = hash
    this.count++
  }

  private grow(): void {
    const old = this.table
    this.table = new Uint32Array(old.length * 2)
    this.count = 0
    for (const hash of old) if (hash !== 0) this.put(hash)
  }
}

/** FNV-1a over the id's UTF-16 code units; never 0 (the table's empty slot). */
function customerHash(customer: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < customer.length; i++) {
    hash ^= customer.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193)
  }
  return hash >>> 0 || 1
}

/**
 * A round's plain lines: each line's number, its block, and where its text is in the round's
 * RowBinary rows, as columns.
 */
export class PlainLines {
  private lines = new Float64Array(1024)
  private blocks = new Uint32Array(1024)
  private starts = new Uint32Array(1024)
  private ends = new Uint32Array(1024)
  length = 0

  push(line: number, block: number, start: number, end: number): void {
    if (this.length === this.lines.length) this.grow()
    const i = this.length++
    this.lines[i] = line
    this.blocks[i] = block
    this.starts[i] = start
    this.ends[i] = end
  }

  line(i: number): number {
    return this.lines[i]!
  }

  block(i: number): number {
    return this.blocks[i]!
  }

  start(i: number): number {
    return this.starts[i]!
  }

  end(i: number): number {
    return this.ends[i]!
  }

  clear(): void {
    this.length = 0
  }

  private grow(): void {
    const size = this.lines.length * 2
    this.lines = grown(this.lines, size)
    this.blocks = grown(this.blocks, size)
    this.starts = grown(this.starts, size)
    this.ends = grown(this.ends, size)
  }
}

function grown<T extends Uint32Array<ArrayBuffer> | Float64Array<ArrayBuffer>>(column: T, size: number): T {
  const bigger = new (column.constructor as new (length: number) => T)(size)
  bigger.set(column)
  return bigger
}
