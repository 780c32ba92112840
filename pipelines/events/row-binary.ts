import { GrowingBuffer } from '../text/growing-buffer.ts'

/**
 * Writes values in ClickHouse's RowBinary format, the form in which events reach the engine: the
 * engine loads a RowBinary row of `events` for about half the CPU of the same row as
 * JSONCompactEachRow (the text need not be parsed), and writing it costs JavaScript less than
 * JSON.stringify does. Pure; used on the CPU pool (an event's own values) and on the main thread
 * (an upload's and a device's values, once each).
 *
 * Layout, per ClickHouse: String = unsigned LEB128 byte length + UTF-8 bytes; Int64 and
 * DateTime64(3) = 8 bytes little endian (milliseconds for DateTime64(3)); Map(String, String) =
 * LEB128 entry count + key, value for each entry. JavaScript strings that hold a lone surrogate
 * are written with U+FFFD in its place (Buffer's UTF-8 encoding), so every string is valid UTF-8.
 */
export class RowBinaryWriter extends GrowingBuffer {
  string(s: string): void {
    const n = s.length
    // Up to 127 UTF-16 units of ASCII (by far the usual case: ids, names, push tokens) take a
    // one-byte length and are copied unit by unit, cheaper than a call into C++ for strings this
    // short; up to 42 units take at most 126 bytes whatever they hold, so the length still fits
    // one byte, known after writing.
    if (n <= 127) {
      this.reserve(1 + 3 * n)
      const buffer = this.buffer
      const start = this.at + 1
      let i = 0
      for (; i < n; i++) {
        const c = s.charCodeAt(i)
        if (c > 0x7f) break
        buffer[start + i] = c
      }
      if (i === n || n <= 42) {
        const written = i === n ? n : buffer.write(s, start, 'utf8')
        buffer[this.at] = written
        this.at = start + written
        return
      }
    }
    const bytes = Buffer.byteLength(s, 'utf8')
    this.varUInt(bytes)
    this.reserve(bytes)
    this.at += this.buffer.write(s, this.at, 'utf8')
  }

  /** A String from bytes already UTF-8 (`src[start, end)`), copied as they are. */
  stringBytes(src: Buffer, start: number, end: number): void {
    const n = end - start
    this.varUInt(n)
    this.reserve(n)
    const buffer = this.buffer
    const at = this.at
    // Short values unit by unit: cheaper than a call into C++.
    if (n <= 64) for (let i = 0; i < n; i++) buffer[at + i] = src[start + i]!
    else src.copy(buffer, at, start, end)
    this.at = at + n
  }

  /** A non-negative safe integer as UInt16, UInt32 or UInt64 (`bytes`), little endian. */
  uint(value: number, bytes: 2 | 4 | 8): void {
    if (bytes === 8) return this.int64(value)
    this.reserve(bytes)
    const buffer = this.buffer
    const at = this.at
    const low = value >>> 0
    buffer[at] = low
    buffer[at + 1] = low >>> 8
    if (bytes === 4) {
      buffer[at + 2] = low >>> 16
      buffer[at + 3] = low >>> 24
    }
    this.at = at + bytes
  }

  /** A safe integer as Int64 (also DateTime64(3) from milliseconds). */
  int64(value: number): void {
    this.reserve(8)
    const buffer = this.buffer
    const at = this.at
    // ToUint32 takes the low 32 bits modulo 2^32 of any integer; floor gives the high half in
    // two's complement for negative values too.
    const low = value >>> 0
    const high = Math.floor(value / 4294967296)
    buffer[at] = low
    buffer[at + 1] = low >>> 8
    buffer[at + 2] = low >>> 16
    buffer[at + 3] = low >>> 24
    buffer[at + 4] = high
    buffer[at + 5] = high >>> 8
    buffer[at + 6] = high >>> 16
    buffer[at + 7] = high >>> 24
    this.at = at + 8
  }

  /** Map(String, String) from an object's own enumerable string members. */
  stringMap(map: Record<string, string>): void {
    let count = 0
    for (const key in map) if (Object.hasOwn(map, key)) count++
    this.varUInt(count)
    for (const key in map) {
      if (!Object.hasOwn(map, key)) continue
      this.string(key)
      this.string(map[key]!)
    }
  }

  varUInt(value: number): void {
    this.reserve(10)
    let v = value
    while (v >= 0x80) {
      this.buffer[this.at++] = (v & 0x7f) | 0x80
      v = Math.floor(v / 128)
    }
    this.buffer[this.at++] = v
  }
}

/** Reads RowBinary values back (the writer's tests, and reading a block's rows as columns). */
export class RowBinaryReader {
  at: number

  constructor(
    private readonly bytes: Buffer,
    start = 0,
  ) {
    this.at = start
  }

  get done(): boolean {
    return this.at >= this.bytes.length
  }

  varUInt(): number {
    let value = 0
    let scale = 1
    for (;;) {
      const byte = this.bytes[this.at++]
      if (byte === undefined) throw new RangeError('RowBinary ends inside a length')
      value += (byte & 0x7f) * scale
      if (byte < 0x80) return value
      scale *= 128
    }
  }

  string(): string {
    const length = this.varUInt()
    const end = this.at + length
    if (end > this.bytes.length) throw new RangeError('RowBinary ends inside a string')
    const s = this.bytes.toString('utf8', this.at, end)
    this.at = end
    return s
  }

  int64(): number {
    if (this.at + 8 > this.bytes.length) throw new RangeError('RowBinary ends inside an Int64')
    const low = this.bytes.readUInt32LE(this.at)
    const high = this.bytes.readInt32LE(this.at + 4)
    this.at += 8
    return high * 4294967296 + low
  }

  stringMap(): Record<string, string> {
    const count = this.varUInt()
    const map: Record<string, string> = {}
    for (let i = 0; i < count; i++) {
      const key = this.string()
      // defineProperty: a "__proto__" key stays a member
      Object.defineProperty(map, key, {
        value: this.string(),
        enumerable: true,
        writable: true,
        configurable: true,
      })
    }
    return map
  }
}
