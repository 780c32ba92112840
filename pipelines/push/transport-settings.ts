import { createPrivateKey } from 'node:crypto'
import { z } from 'zod'
import type { PushPlatform, PushTransport } from './transport.ts'

/**
 * What an app configures per platform: a transport kind and its settings (validated here, stored
 * as control state, applied by the control plane; docs/push.md "Transports"). Secrets are stored
 * as given, because a transport needs them to sign or authenticate, but reads show them masked.
 */
export type TransportKind = PushTransport['kind']
export const TRANSPORT_KINDS = ['file', 'webhook', 'apns', 'fcm'] as const satisfies readonly TransportKind[]
export const PUSH_PLATFORMS = ['ios', 'android'] as const satisfies readonly PushPlatform[]
/** `all` in a command or a request stands for both platforms. */
export const PLATFORM_CHOICES = ['ios', 'android', 'all'] as const
export type PlatformChoice = (typeof PLATFORM_CHOICES)[number]

export const platformsOfChoice = (choice: PlatformChoice): PushPlatform[] =>
  choice === 'all' ? [...PUSH_PLATFORMS] : [choice]

/** Which kinds can deliver to a platform: APNs is Apple's alone; FCM reaches iOS too (through APNs). */
export const KINDS_BY_PLATFORM: Record<PushPlatform, readonly TransportKind[]> = {
  ios: ['file', 'webhook', 'apns', 'fcm'],
  android: ['file', 'webhook', 'fcm'],
}

const pemKey = (kind: 'ec' | 'rsa', what: string) =>
  z
    .string()
    .max(16_384)
    .refine((pem) => {
      try {
        const key = createPrivateKey(pem)
        return (
          key.asymmetricKeyType === kind &&
          (kind === 'rsa' || key.asymmetricKeyDetails?.namedCurve === 'prime256v1')
        )
      } catch {
        return false
      }
    }, `must be ${what}`)

export const fileSettings = z.object({}).strict()

export const webhookSettings = z
  .object({
    url: z
      .string()
      .max(2048)
      .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'must be an http(s) URL'),
    /** The HMAC-SHA256 key of X-Sluice-Signature. */
    secret: z.string().min(16, 'must be at least 16 characters').max(1024),
    timeout_ms: z.number().int().min(100).max(120_000).default(10_000),
    /** Deliveries per POST: a batch from the pipeline is split into POSTs of at most this many. */
    batch_size: z.number().int().min(1).max(1000).default(100),
  })
  .strict()

export const apnsSettings = z
  .object({
    /** The .p8 signing key's text (PEM, EC P-256). */
    key: pemKey('ec', 'the text of an APNs .p8 key (PEM, EC P-256)'),
    key_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character key id'),
    team_id: z.string().regex(/^[A-Z0-9]{10}$/, 'must be the 10-character team id'),
    /** The app's bundle id (apns-topic). */
    topic: z.string().min(1).max(255),
    /** production: api.push.apple.com; sandbox: api.sandbox.push.apple.com (development builds). */
    environment: z.enum(['production', 'sandbox']).default('production'),
    /** How long APNs keeps trying an offline device (apns-expiration); absent: the header is not sent. */
    expiration_seconds: z
      .number()
      .int()
      .min(0)
      .max(30 * 86_400)
      .optional(),
    /** Requests in flight at once on the app's HTTP/2 connection. */
    concurrency: z.number().int().min(1).max(1000).default(100),
  })
  .strict()

const serviceAccount = z.object({
  project_id: z.string().min(1).max(200),
  client_email: z.email(),
  private_key: pemKey('rsa', 'the RSA private key of a service account (PEM)'),
  private_key_id: z.string().max(200).optional(),
})

export const fcmSettings = z
  .object({
    /** The service account's JSON key file, as an object or as its text. */
    service_account: z.preprocess((v) => {
      if (typeof v !== 'string') return v
      try {
        return JSON.parse(v) as unknown
      } catch {
        return v
      }
    }, serviceAccount),
    /** The Firebase project; default: the service account's project_id. */
    project_id: z.string().min(1).max(200).optional(),
    /** Requests in flight at once. */
    concurrency: z.number().int().min(1).max(1000).default(50),
  })
  .strict()

export type FileSettings = z.infer<typeof fileSettings>
export type WebhookSettings = z.infer<typeof webhookSettings>
export type ApnsSettings = z.infer<typeof apnsSettings>
export type FcmSettings = z.infer<typeof fcmSettings>

export type TransportConfig =
  | { kind: 'file'; settings: FileSettings }
  | { kind: 'webhook'; settings: WebhookSettings }
  | { kind: 'apns'; settings: ApnsSettings }
  | { kind: 'fcm'; settings: FcmSettings }

const settingsOf = { file: fileSettings, webhook: webhookSettings, apns: apnsSettings, fcm: fcmSettings }

/** A kind and its settings (defaults filled in), or the problems found, each naming its field. */
export function parseTransportConfig(
  kind: unknown,
  settings: unknown,
): { ok: true; config: TransportConfig } | { ok: false; errors: string[] } {
  const k = z.enum(TRANSPORT_KINDS).safeParse(kind)
  if (!k.success) return { ok: false, errors: [`kind: must be one of ${TRANSPORT_KINDS.join(', ')}`] }
  const parsed = settingsOf[k.data].safeParse(settings ?? {})
  if (!parsed.success)
    return {
      ok: false,
      errors: parsed.error.issues.map(
        (i) => `settings${i.path.map((p) => `.${String(p)}`).join('')}: ${i.message}`,
      ),
    }
  return { ok: true, config: { kind: k.data, settings: parsed.data } as TransportConfig }
}

/** Every kind that cannot deliver to one of these platforms, as an error message; undefined: all can. */
export function platformMismatch(
  kind: TransportKind,
  platforms: readonly PushPlatform[],
): string | undefined {
  const refused = platforms.filter((p) => !KINDS_BY_PLATFORM[p].includes(kind))
  return refused.length === 0 ? undefined : `${kind} cannot deliver to ${refused.join(', ')}`
}

/**
 * Settings as reads show them: every secret replaced by `****` and its last 4 characters (of the
 * key material itself for a PEM key), enough to tell which one is configured, never to use it.
 */
export function maskSettings(config: TransportConfig): Record<string, unknown> {
  switch (config.kind) {
    case 'file':
      return {}
    case 'webhook':
      return { ...config.settings, secret: mask(config.settings.secret) }
    case 'apns':
      return { ...config.settings, key: mask(pemBody(config.settings.key)) }
    case 'fcm':
      return {
        ...config.settings,
        service_account: {
          ...config.settings.service_account,
          private_key: mask(pemBody(config.settings.service_account.private_key)),
        },
      }
  }
}

export const mask = (secret: string) => `****${secret.length >= 16 ? secret.slice(-4) : ''}`

const pemBody = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '')
