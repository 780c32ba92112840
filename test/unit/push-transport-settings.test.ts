import { describe, expect, it } from 'vitest'
import { retryAfterMs } from '../../pipelines/push/retry-after.ts'
import {
  maskSettings,
  parseTransportConfig,
  platformMismatch,
  platformsOfChoice,
  type TransportConfig,
} from '../../pipelines/push/transport-settings.ts'
import { p8Key } from '../helpers/apns-standin.ts'
import { serviceAccount } from '../helpers/fcm-standin.ts'

const p8 = p8Key().pem
const account = serviceAccount('proj-1').json

const ok = (kind: string, settings: unknown): TransportConfig => {
  const parsed = parseTransportConfig(kind, settings)
  if (!parsed.ok) throw new Error(parsed.errors.join('; '))
  return parsed.config
}
const errors = (kind: unknown, settings: unknown) => {
  const parsed = parseTransportConfig(kind, settings)
  return parsed.ok ? [] : parsed.errors
}

describe('transport settings', () => {
  it('fills the defaults of each kind', () => {
    expect(ok('file', undefined)).toEqual({ kind: 'file', settings: {} })
    expect(ok('webhook', { url: 'https://hooks.example/push', secret: 's'.repeat(16) }).settings).toEqual({
      url: 'https://hooks.example/push',
      secret: 's'.repeat(16),
      timeout_ms: 10_000,
      batch_size: 100,
    })
    expect(
      ok('apns', { key: p8, key_id: 'ABCDE12345', team_id: 'TEAM123456', topic: 'com.a' }).settings,
    ).toEqual({
      key: p8,
      key_id: 'ABCDE12345',
      team_id: 'TEAM123456',
      topic: 'com.a',
      environment: 'production',
      concurrency: 100,
    })
    // The key file as its text, as `sluice admin` reads it from disk; unknown fields dropped.
    expect(ok('fcm', { service_account: JSON.stringify(account) }).settings).toEqual({
      service_account: {
        project_id: 'proj-1',
        client_email: account.client_email,
        private_key: account.private_key,
        private_key_id: account.private_key_id,
      },
      concurrency: 50,
    })
  })

  it('names each bad field', () => {
    expect(errors('carrier-pigeon', {})).toEqual(['kind: must be one of file, webhook, apns, fcm'])
    expect(errors('webhook', { url: 'ftp://x', secret: 'short' })).toEqual([
      'settings.url: must be an http(s) URL',
      'settings.secret: must be at least 16 characters',
    ])
    expect(
      errors('apns', { key: account.private_key, key_id: 'abc', team_id: 'TEAM123456', topic: 'x' }),
    ).toEqual([
      'settings.key: must be the text of an APNs .p8 key (PEM, EC P-256)',
      'settings.key_id: must be the 10-character key id',
    ])
    expect(errors('fcm', { service_account: { ...account, private_key: p8 } })).toEqual([
      'settings.service_account.private_key: must be the RSA private key of a service account (PEM)',
    ])
    expect(errors('file', { path: '/etc' })[0]).toMatch(/^settings: Unrecognized key/)
  })

  it('APNs delivers to iOS only', () => {
    expect(platformMismatch('apns', ['ios'])).toBeUndefined()
    expect(platformMismatch('apns', platformsOfChoice('all'))).toBe('apns cannot deliver to android')
    expect(platformMismatch('fcm', platformsOfChoice('all'))).toBeUndefined()
  })

  it('masks every secret on read, keeping its last 4 characters', () => {
    const webhook = ok('webhook', { url: 'https://h.example/', secret: 'whsec-0123456789abcdef' })
    expect(maskSettings(webhook)).toEqual({
      url: 'https://h.example/',
      secret: '****cdef',
      timeout_ms: 10_000,
      batch_size: 100,
    })
    const apns = maskSettings(
      ok('apns', { key: p8, key_id: 'ABCDE12345', team_id: 'TEAM123456', topic: 'com.a' }),
    )
    expect(apns.key).toMatch(/^\*{4}[A-Za-z0-9+/=]{4}$/)
    const fcm = maskSettings(ok('fcm', { service_account: account }))
    const masked = JSON.stringify(fcm)
    expect(masked).not.toContain('PRIVATE KEY')
    expect(masked).toContain(account.client_email)
    for (const m of [apns, fcm]) expect(JSON.stringify(m)).not.toContain(p8.slice(40, 80))
    expect(masked).not.toContain(account.private_key.slice(40, 80))
  })
})

describe('Retry-After', () => {
  const now = Date.UTC(2025, 0, 1, 12, 0, 0)
  it('reads delay-seconds and HTTP dates; past, absent or junk is none', () => {
    expect(retryAfterMs('120', now)).toBe(120_000)
    expect(retryAfterMs(' 0 ', now)).toBe(0)
    expect(retryAfterMs('Wed, 01 Jan 2025 12:00:30 GMT', now)).toBe(30_000)
    expect(retryAfterMs('Wed, 01 Jan 2025 11:00:00 GMT', now)).toBeUndefined()
    expect(retryAfterMs('soon', now)).toBeUndefined()
    expect(retryAfterMs(null, now)).toBeUndefined()
    expect(retryAfterMs(undefined, now)).toBeUndefined()
  })
})
