import http2 from 'node:http2'
import { createRequire } from 'node:module'
import type { Notification, Provider, ProviderOptions } from '@parse/node-apn'

/**
 * @parse/node-apn's Provider, assembled from the library's own parts as its index.js does, with
 * two differences:
 *
 * 1. Its http2 is node:http2 with one hook: each response's `retry-after` header is kept by the
 *    request's `apns-id`. The library reads that header as `Retry-After` (HTTP/2 header names are
 *    lower case, so it never finds it) and drops it from the errors it reports; the transport needs
 *    it for its retry outcomes.
 * 2. Its logger is silent: nothing it could log (responses, sessions) reaches stdout, and the
 *    signing key never does.
 *
 * The parts are the library's (lib/credentials, lib/config, lib/client, lib/provider of 8.1.0,
 * pinned in package-lock.json); the TLS session, HTTP/2 multiplexing and the .p8 JWT (ES256,
 * renewed every 55 minutes) are all its own.
 */
const require = createRequire(import.meta.url)

type Factory = (deps: Record<string, unknown>) => unknown
const load = (part: string) => require(`@parse/node-apn/lib/${part}`) as Factory

const silent = Object.assign(() => {}, { enabled: false })

interface Credentials {
  certificate: unknown
  token: unknown
  ca: unknown
}

export interface ApnsProvider {
  provider: Provider
  /** The Retry-After header of the response to the request with this apns-id, once (then forgotten). */
  takeRetryAfter(apnsId: string): string | undefined
}

export function createApnsProvider(options: ProviderOptions): ApnsProvider {
  const retryAfters = new Map<string, string>()
  const recordingHttp2 = {
    constants: http2.constants,
    connect(...args: Parameters<typeof http2.connect>) {
      const session = http2.connect(...args)
      const request = session.request.bind(session)
      session.request = (headers, requestOptions) => {
        const stream = request(headers, requestOptions)
        const id = headers?.['apns-id']
        if (typeof id === 'string')
          stream.once('response', (responseHeaders) => {
            const value = responseHeaders['retry-after']
            if (typeof value !== 'string') return
            // Taken when the failure is mapped; bounded in case a success ever carries one too.
            if (retryAfters.size >= 10_000) retryAfters.clear()
            retryAfters.set(id, value)
          })
        return stream
      }
      return session
    },
  }
  const credentials = load('credentials')({ logger: silent }) as Credentials
  const config = load('config')({
    logger: silent,
    prepareCertificate: credentials.certificate,
    prepareToken: credentials.token,
    prepareCA: credentials.ca,
  })
  const Client = load('client')({ logger: silent, errorLogger: silent, config, http2: recordingHttp2 })
  const ProviderClass = load('provider')({ logger: silent, Client }) as new (
    options: ProviderOptions,
  ) => Provider
  return {
    provider: new ProviderClass(options),
    takeRetryAfter(apnsId) {
      const value = retryAfters.get(apnsId)
      retryAfters.delete(apnsId)
      return value
    },
  }
}

export type { Notification }
