import { describe, expect, it } from 'vitest'
import { toJsonEachRow } from '../../pipelines/connectors/store/rows.ts'
import { abbreviate, cutCodePoints, parseJsonWellFormed, wellFormed } from '../../pipelines/text/unicode.ts'
import { canonicalDeviceId, canonicalEventUuid, canonicalUuid128 } from '../../schemas/uuid.ts'

describe('well-formed text for the engine', () => {
  it('replaces lone surrogates with U+FFFD and keeps pairs', () => {
    expect(wellFormed('a\ud800b')).toBe('a\uFFFDb')
    expect(wellFormed('\udfff')).toBe('\uFFFD')
    expect(wellFormed('😀')).toBe('😀')
  })

  it('cuts on code points, never inside a pair', () => {
    expect(cutCodePoints('a😀b', 2)).toBe('a😀')
    expect(cutCodePoints('😀😀😀', 1)).toBe('😀')
    expect(cutCodePoints('abc', 5)).toBe('abc')
    expect(abbreviate(`${'a'.repeat(39)}😀xyz`, 40)).toBe(`${'a'.repeat(39)}😀…`)
    expect(abbreviate('short', 40)).toBe('short')
  })

  it('parses JSON whose escaped lone surrogates become U+FFFD, in values and member names', () => {
    expect(
      parseJsonWellFormed('{"a\\ud800":"x\\udfff","b":["\\ud83d",{"\\udc00":1}],"ok":"\\ud83d\\ude00"}'),
    ).toEqual({ 'a\uFFFD': 'x\uFFFD', b: ['\uFFFD', { '\uFFFD': 1 }], ok: '😀' })
    // A "__proto__" member stays a member when its object is rebuilt.
    const o = parseJsonWellFormed('{"__proto__":{"x":1},"\\ud800":2}') as Record<string, unknown>
    expect(Object.hasOwn(o, '__proto__')).toBe(true)
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype)
  })

  it('walks deep nesting without recursion', () => {
    const depth = 100_000
    const value = parseJsonWellFormed(`${'['.repeat(depth)}"\\ud800"${']'.repeat(depth)}`)
    let inner: unknown = value
    for (let i = 0; i < depth; i++) inner = (inner as unknown[])[0]
    expect(inner).toBe('\uFFFD')
  })

  it('serialises rows for the engine without a lone surrogate escape', () => {
    const text = toJsonEachRow([
      { a: 'x\ud800', m: { 'k\udc00': 'v' }, ok: '😀', literal: '\\ud800' },
    ]).toString()
    expect(text).toBe('{"a":"x\uFFFD","m":{"k\uFFFD":"v"},"ok":"😀","literal":"\\\\ud800"}\n')
  })
})

describe('canonical ids (issue 18)', () => {
  const canonical = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b'

  it.each([
    canonical,
    canonical.toUpperCase(),
    canonical.replaceAll('-', ''),
    canonical.replaceAll('-', '').toUpperCase(),
    '6F1C-2A9E-3B4D-4E5F-8A7B-9C0D-1E2F-3A4B',
  ])('%s is the 128-bit UUID %s', (spelling) => {
    expect(canonicalUuid128(spelling)).toBe(canonical)
    expect(canonicalEventUuid(spelling)).toBe(canonical)
    expect(canonicalDeviceId(spelling)).toBe(canonical)
  })

  it('lower-cases other event ids, keeps other device ids as sent, and leaves braces alone', () => {
    expect(canonicalEventUuid('ABCDEF0123456789ABCDEF0123456789ABCDEF01')).toBe(
      'abcdef0123456789abcdef0123456789abcdef01',
    )
    expect(canonicalUuid128('ABCDEF0123456789ABCDEF0123456789ABCDEF01')).toBeUndefined()
    expect(canonicalDeviceId('Device-Of-Alice')).toBe('Device-Of-Alice')
    expect(canonicalDeviceId(`{${canonical.toUpperCase()}}`)).toBe(`{${canonical.toUpperCase()}}`)
    expect(canonicalUuid128(`{${canonical}}`)).toBeUndefined()
  })
})
