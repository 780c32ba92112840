import { describe, expect, it } from 'vitest'
import { RowBinaryReader, RowBinaryWriter } from '../../pipelines/events/row-binary.ts'

describe('RowBinary', () => {
  it('writes strings as LEB128 byte length + UTF-8, short and long, ASCII or not', () => {
    const w = new RowBinaryWriter(4) // grows as it goes
    w.string('')
    w.string('abc')
    w.string('é🎉')
    w.string('x'.repeat(200))
    w.string('ü'.repeat(100))
    const bytes = w.view()
    expect([...bytes.subarray(0, 5)]).toEqual([0, 3, 0x61, 0x62, 0x63])
    // 'é' is 2 bytes, '🎉' 4
    expect([...bytes.subarray(5, 12)]).toEqual([6, 0xc3, 0xa9, 0xf0, 0x9f, 0x8e, 0x89])
    // 200 = 0xc8: LEB128 0xc8 0x01
    expect([...bytes.subarray(12, 14)]).toEqual([0xc8, 0x01])
    const r = new RowBinaryReader(bytes)
    expect([r.string(), r.string(), r.string(), r.string(), r.string()]).toEqual([
      '',
      'abc',
      'é🎉',
      'x'.repeat(200),
      'ü'.repeat(100),
    ])
    expect(r.done).toBe(true)
  })

  it('writes every length around the one-byte fast paths alike, ASCII or not', () => {
    // The writer copies ASCII of up to 127 units itself and writes up to 42 units of anything in
    // place: each length across those borders, with the first non-ASCII unit early or late.
    const expected = (s: string) => {
      const utf8 = Buffer.from(s, 'utf8')
      const length: number[] = []
      for (let v = utf8.length; ; v = Math.floor(v / 128)) {
        if (v < 0x80) {
          length.push(v)
          break
        }
        length.push((v & 0x7f) | 0x80)
      }
      return Buffer.concat([Buffer.from(length), utf8])
    }
    for (const n of [41, 42, 43, 63, 64, 126, 127, 128, 129]) {
      for (const s of ['a'.repeat(n), 'é' + 'a'.repeat(n - 1), 'a'.repeat(n - 1) + '€']) {
        const w = new RowBinaryWriter(8)
        w.string(s)
        expect(w.view().equals(expected(s)), `${n} units: ${JSON.stringify(s.slice(0, 3))}…`).toBe(true)
        expect(new RowBinaryReader(w.view()).string()).toBe(s)
      }
    }
  })

  it('writes unsigned integers in 2, 4 or 8 bytes and copies raw bytes as they are', () => {
    const w = new RowBinaryWriter(2)
    w.uint(0xbeef, 2)
    w.uint(0xdeadbeef, 4)
    w.uint(2 ** 40 + 5, 8)
    w.append(Buffer.from([1, 2, 3]))
    expect([...w.view()]).toEqual([0xef, 0xbe, 0xef, 0xbe, 0xad, 0xde, 5, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3])
  })

  it('writes a lone surrogate as U+FFFD, so every string is valid UTF-8', () => {
    const w = new RowBinaryWriter()
    w.string('a\ud800b')
    expect([...w.view()]).toEqual([5, 0x61, 0xef, 0xbf, 0xbd, 0x62])
  })

  it('writes Int64 little endian in two’s complement across the safe range', () => {
    for (const value of [
      0,
      1,
      -1,
      255,
      256,
      1_700_000_000_123,
      -1_700_000_000_123,
      2 ** 53 - 1,
      -(2 ** 53 - 1),
    ]) {
      const w = new RowBinaryWriter()
      w.int64(value)
      const expected = Buffer.alloc(8)
      expected.writeBigInt64LE(BigInt(value))
      expect(w.view()).toEqual(expected)
      expect(new RowBinaryReader(w.view()).int64()).toBe(value)
    }
  })

  it('writes Map(String, String) as a count and its pairs', () => {
    const w = new RowBinaryWriter()
    w.stringMap({ a: '1', bb: '' })
    w.stringMap({})
    expect([...w.view()]).toEqual([2, 1, 0x61, 1, 0x31, 2, 0x62, 0x62, 0, 0])
    const r = new RowBinaryReader(w.view())
    expect(r.stringMap()).toEqual({ a: '1', bb: '' })
    expect(r.stringMap()).toEqual({})
  })

  it('refuses to read past the end', () => {
    const w = new RowBinaryWriter()
    w.string('abcdef')
    expect(() => new RowBinaryReader(w.view().subarray(0, 4)).string()).toThrow(RangeError)
    expect(() => new RowBinaryReader(Buffer.alloc(3)).int64()).toThrow(RangeError)
  })
})
