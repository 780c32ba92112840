import type { TransportConfig } from '../../push/transport-settings.ts'
import type { PushTransport } from '../../push/transport.ts'
import { ApnsTransport, type ApnsEndpoint } from './apns-transport.ts'
import { FcmTransport, type FcmEndpoints } from './fcm-transport.ts'
import type { FileTransport } from './file-transport.ts'
import { WebhookTransport } from './webhook-transport.ts'

/** Where APNs and FCM are reached (overrides for proxies and tests) and how long a request may take. */
export interface TransportEndpoints {
  apns?: ApnsEndpoint
  fcm?: FcmEndpoints
  requestTimeoutMs?: number
}

/** A transport for one app's configuration; `file` is the process's shared file transport. */
export function createTransport(
  config: TransportConfig,
  deps: { file: FileTransport; endpoints: TransportEndpoints },
): PushTransport {
  const timeout =
    deps.endpoints.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: deps.endpoints.requestTimeoutMs }
  switch (config.kind) {
    case 'file':
      return deps.file
    case 'webhook':
      return new WebhookTransport(config.settings)
    case 'apns':
      return new ApnsTransport(config.settings, {
        ...timeout,
        ...(deps.endpoints.apns && { endpoint: deps.endpoints.apns }),
      })
    case 'fcm':
      return new FcmTransport(config.settings, {
        ...timeout,
        ...(deps.endpoints.fcm && { endpoints: deps.endpoints.fcm }),
      })
  }
}
