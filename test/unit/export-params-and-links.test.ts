import { describe, expect, it } from 'vitest'
import {
  hourLabel,
  parseIdentifierType,
  parseLogHour,
  parsePositiveId,
  parseProfileJobType,
} from '../../pipelines/exports/export-params.ts'
import {
  checkLink,
  linkKeyFromAdminToken,
  normaliseExportPath,
  signLink,
} from '../../pipelines/exports/signed-links.ts'
import { acceptsGzip } from '../../services/edge/routes/export-files.ts'

describe('export path parameters', () => {
  it('reads a log hour with or without leading zeros, in UTC', () => {
    const expected = Date.UTC(2026, 2, 5, 7)
    for (const [m, d, h] of [
      ['3', '5', '7'],
      ['03', '05', '07'],
      ['3', '05', '7'],
    ] as const)
      expect(parseLogHour('2026', m, d, h)).toEqual({ ok: true, value: expected })
    expect(parseLogHour('2024', '2', '29', '0')).toEqual({ ok: true, value: Date.UTC(2024, 1, 29, 0) })
    expect(parseLogHour('2026', '12', '31', '23')).toEqual({ ok: true, value: Date.UTC(2026, 11, 31, 23) })
    expect(hourLabel(expected)).toBe('2026-03-05T07')
  })

  it.each([
    ['26', '3', '5', '7', /year/],
    ['20266', '3', '5', '7', /year/],
    ['2026', '13', '5', '7', /month/],
    ['2026', '0', '5', '7', /month/],
    ['2026', '003', '5', '7', /month/],
    ['2026', '+3', '5', '7', /month/],
    ['2026', '3', '5', '24', /hour/],
    ['2026', '3', '5', '-1', /hour/],
    ['2026', '3', '5', '7.0', /hour/],
    ['2026', '2', '29', '0', /day must be 1 \(or 01\) to 28/],
    ['2026', '4', '31', '0', /to 30/],
    ['2026', '4', '0', '0', /day/],
    ['2026', ' 4', '1', '0', /month/],
  ])('refuses %s/%s/%s/%s', (y, m, d, h, reason) => {
    const parsed = parseLogHour(y, m, d, h)
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.reason).toMatch(reason)
  })

  it('reads ids, identifier types and job types exactly', () => {
    expect(parsePositiveId('42', 'x')).toEqual({ ok: true, value: 42 })
    for (const bad of ['0', '-1', '1e3', '4.2', ' 4', '0x10', '', '1234567890123456'])
      expect(parsePositiveId(bad, 'profiledb_id').ok).toBe(false)
    expect(parseIdentifierType('gaid')).toEqual({ ok: true, value: 'gaid' })
    expect(parseIdentifierType('IDFA').ok).toBe(false)
    expect(parseProfileJobType('profile_changes')).toEqual({ ok: true, value: 'profile_changes' })
    expect(parseProfileJobType('changes').ok).toBe(false)
  })
})

describe('signed links', () => {
  const key = linkKeyFromAdminToken('a-deployment-admin-token')
  const path = 'exports/1/7/hour2026112313-20261123T140000123Z.log.gz'
  const now = 1_800_000_000
  const parts = (link: string) => {
    const url = new URL(`http://edge${link}`)
    return {
      raw: url.pathname.slice('/files/'.length),
      expires: url.searchParams.get('expires') ?? undefined,
      sig: url.searchParams.get('sig') ?? undefined,
    }
  }

  it('accepts its own link until it expires, and only with this key', () => {
    const link = signLink(key, path, now + 60)
    expect(link).toMatch(/^\/files\/exports\/1\/7\/.+\.log\.gz\?expires=1800000060&sig=[0-9a-f]{64}$/)
    const p = parts(link)
    expect(checkLink(key, p.raw, p.expires, p.sig, now)).toEqual({ ok: true, path })
    expect(checkLink(key, p.raw, p.expires, p.sig, now + 61)).toMatchObject({ ok: false, status: 410 })
    const other = linkKeyFromAdminToken('another-deployment-token')
    expect(checkLink(other, p.raw, p.expires, p.sig, now)).toMatchObject({ ok: false, status: 403 })
  })

  it('refuses any change to the path, the expiry or the signature', () => {
    const p = parts(signLink(key, path, now + 60))
    expect(checkLink(key, p.raw.replace('/7/', '/8/'), p.expires, p.sig, now)).toMatchObject({ status: 403 })
    expect(checkLink(key, p.raw, String(now + 3600), p.sig, now)).toMatchObject({ status: 403 })
    const flipped = (p.sig![0] === 'a' ? 'b' : 'a') + p.sig!.slice(1)
    expect(checkLink(key, p.raw, p.expires, flipped, now)).toMatchObject({ status: 403 })
    expect(checkLink(key, p.raw, p.expires, p.sig!.toUpperCase(), now)).toMatchObject({ status: 403 })
    expect(checkLink(key, p.raw, p.expires, p.sig!.slice(2), now)).toMatchObject({ status: 403 })
    expect(checkLink(key, p.raw, undefined, p.sig, now)).toMatchObject({ status: 403 })
    expect(checkLink(key, p.raw, '1e12', p.sig, now)).toMatchObject({ status: 403 })
  })

  it.each([
    'exports/../admin-token',
    'exports/%2e%2e/admin-token',
    'exports/%2E%2E/%2E%2E/etc/passwd',
    'exports/1/..%2f..%2fadmin-token',
    'exports/1%2f..%2f..%2fadmin-token',
    'exports/./1/x.log.gz',
    'exports//etc/passwd',
    '/etc/passwd',
    '%2fetc%2fpasswd',
    'exports/1/x%00.log.gz',
    'exports\\..\\admin-token',
    'exports/1/%5c..%5cx',
    'clickhouse/store/x',
    'exports/1/x%',
  ])('refuses the path %j however it is signed', (raw) => {
    // Even a signature made over the decoded text cannot make these acceptable.
    const decoded = (() => {
      try {
        return decodeURIComponent(raw)
      } catch {
        return raw
      }
    })()
    const sig = '0'.repeat(64)
    expect(checkLink(key, raw, String(now + 60), sig, now)).toMatchObject({ ok: false, status: 403 })
    expect(normaliseExportPath(decoded)).toBeUndefined()
    expect(() => signLink(key, decoded, now + 60)).toThrow(/not an export file path/)
  })

  it('the link key is derived from the admin token: the same on every edge of a deployment', () => {
    expect(linkKeyFromAdminToken('t'.repeat(20)).equals(linkKeyFromAdminToken('t'.repeat(20)))).toBe(true)
    expect(linkKeyFromAdminToken('t'.repeat(20)).equals(linkKeyFromAdminToken('u'.repeat(20)))).toBe(false)
  })

  it('reads Accept-Encoding for gzip', () => {
    expect(acceptsGzip('gzip, deflate, br')).toBe(true)
    expect(acceptsGzip('deflate, gzip;q=0.5')).toBe(true)
    expect(acceptsGzip('*')).toBe(true)
    expect(acceptsGzip('gzip;q=0')).toBe(false)
    expect(acceptsGzip('identity')).toBe(false)
    expect(acceptsGzip(undefined)).toBe(false)
  })
})
