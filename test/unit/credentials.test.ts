import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  generateApiKey,
  generateSecret,
  hashSecret,
  parseBasicAuth,
  safeEqual,
  VerifiedCredentials,
  verifySecret,
} from '../../services/control/credentials.ts'

describe('credentials', () => {
  it('generates distinct keys and high-entropy secrets', () => {
    const keys = new Set(Array.from({ length: 100 }, generateApiKey))
    expect(keys.size).toBe(100)
    expect(generateSecret()).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it('verifies a secret only against the hash made for its own key', () => {
    const secret = generateSecret()
    const hash = hashSecret('key-a', secret)
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
    expect(hash).not.toContain(secret)
    expect(verifySecret('key-a', secret, hash)).toBe(true)
    expect(verifySecret('key-a', secret + 'x', hash)).toBe(false)
    expect(verifySecret('key-b', secret, hash)).toBe(false)
  })

  it('hashes as stored hashes were made (SHA-256 of sluice:v1:key:secret), so they still verify', () => {
    const stored = createHash('sha256').update('sluice:v1:key-a:s3cret-é').digest('hex')
    expect(hashSecret('key-a', 's3cret-é')).toBe(stored)
    expect(verifySecret('key-a', 's3cret-é', stored)).toBe(true)
  })

  it('never verifies against a stored value that is not a SHA-256 hex digest', () => {
    const secret = generateSecret()
    const hash = hashSecret('key-a', secret)
    expect(verifySecret('key-a', secret, hash.toUpperCase())).toBe(false)
    expect(verifySecret('key-a', secret, hash.slice(0, 63))).toBe(false)
    expect(verifySecret('key-a', secret, `${hash}0`)).toBe(false)
    expect(verifySecret('key-a', secret, '')).toBe(false)
  })

  it('compares strings of different lengths safely', () => {
    expect(safeEqual('abc', 'abc')).toBe(true)
    expect(safeEqual('abc', 'abcd')).toBe(false)
    expect(safeEqual('', '')).toBe(true)
  })

  it.each([
    [`Basic ${Buffer.from('key:sec:ret').toString('base64')}`, { user: 'key', password: 'sec:ret' }],
    [`basic ${Buffer.from('k:').toString('base64')}`, { user: 'k', password: '' }],
    [`Basic ${Buffer.from('nocolon').toString('base64')}`, undefined],
    ['Bearer abc', undefined],
    ['Basic !!!', undefined],
    [undefined, undefined],
  ])('parses %s', (header, expected) => {
    expect(parseBasicAuth(header)).toEqual(expected)
  })

  it('matches a verified header by its exact bytes only', () => {
    const header = `Basic ${Buffer.from('k1:s1').toString('base64')}`
    const verified = VerifiedCredentials.of(header, 'k1', hashSecret('k1', 's1'))
    expect(verified.matches(header)).toBe(true)
    expect(verified.matches(`${header} `)).toBe(false)
    expect(verified.matches(header.replace('Basic', 'basic'))).toBe(false)
    expect(verified.matches(`Basic ${Buffer.from('k1:s2').toString('base64')}`)).toBe(false)
    expect(verified.matches('')).toBe(false)
    // Same length in UTF-16 units, not in bytes: no throw from the constant-time compare.
    expect(verified.matches('é'.repeat(header.length))).toBe(false)
    expect(verified.apiKey).toBe('k1')
  })
})
