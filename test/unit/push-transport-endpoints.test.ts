import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../services/config.ts'
import { transportEndpoints } from '../../services/push/transport-resolver.ts'

const CA = fileURLToPath(new URL('../fixtures/tls/cert-a.pem', import.meta.url))

describe('push transport endpoints from the configuration', () => {
  it("defaults to Apple's host per app environment and Google's URLs", () => {
    expect(transportEndpoints(loadConfig({}))).toEqual({
      requestTimeoutMs: 10_000,
      fcm: { baseUrl: 'https://fcm.googleapis.com', tokenUrl: 'https://oauth2.googleapis.com/token' },
    })
  })

  it('points APNs and FCM elsewhere (a proxy, a stand-in), trusting the given CA', () => {
    const endpoints = transportEndpoints(
      loadConfig({
        SLUICE_APNS_URL: 'https://127.0.0.1:4443',
        SLUICE_APNS_CA_FILE: CA,
        SLUICE_FCM_URL: 'http://127.0.0.1:9000',
        SLUICE_FCM_TOKEN_URL: 'http://127.0.0.1:9000/token',
        SLUICE_PUSH_REQUEST_TIMEOUT_MS: '2500',
      }),
    )
    expect(endpoints).toEqual({
      requestTimeoutMs: 2500,
      apns: { host: '127.0.0.1', port: 4443, ca: [readFileSync(CA)] },
      fcm: { baseUrl: 'http://127.0.0.1:9000', tokenUrl: 'http://127.0.0.1:9000/token' },
    })
    expect(() => loadConfig({ SLUICE_APNS_URL: 'not a url' })).toThrow(/SLUICE_APNS_URL/)
  })
})
