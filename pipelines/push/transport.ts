export type PushPlatform = 'ios' | 'android'
export interface PushAlert {
  title: string
  subtitle?: string
  body: string
}
export interface IosOptions {
  sound?: string
  badge?: number
  category?: string
  content_available?: boolean /* default true */
  mutable_content?: boolean /* default false */
  extra?: Record<string, unknown>
}
export interface AndroidAction {
  title: string
  icon?: string
  deeplink?: string
}
export interface AndroidOptions {
  priority?: 'high' | 'normal'
  extra?: Record<string, unknown> /* extra.ll_actions?: AndroidAction[] */
}
/** One message as validated and normalised by the edge ('' alert = silent push). */
export interface PushMessage {
  alert: string | PushAlert
  ios?: IosOptions
  android?: AndroidOptions
}
export interface PushDelivery {
  /** `${requestId}:${installUuid}`: the idempotency key a receiver can drop repeats by. */
  deliveryId: string
  requestId: string
  campaignKey: string | null
  appId: string
  installUuid: string
  customerId: string
  platform: PushPlatform
  pushToken: string
  message: PushMessage
  /** 1 on the first try. */
  attempt: number
}
export type DeliveryOutcome =
  | { status: 'sent' }
  /** Permanent: not retried. invalidToken: the token is dead (APNs 410 / BadDeviceToken, FCM UNREGISTERED): never used again. */
  | { status: 'failed'; error: string; invalidToken?: boolean }
  /** Transient (429, 5xx, timeout): retried with backoff, no sooner than retryAfterMs. */
  | { status: 'retry'; error: string; retryAfterMs?: number }
export interface PushTransport {
  readonly kind: 'file' | 'webhook' | 'apns' | 'fcm'
  /** One outcome per delivery, same order. Throws only when nothing could be attempted (then the whole batch is retried). */
  send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]>
  close(): Promise<void>
}
/** Which transport delivers an app's pushes to a platform; undefined: none configured (the edge answers 403 naming the platform). */
export interface TransportResolver {
  transportFor(appId: string, platform: PushPlatform): Promise<PushTransport | undefined>
  /** The platforms the app can deliver to now (for the edge's 403 check). */
  platformsOf(appId: string): Promise<PushPlatform[]>
  close(): Promise<void>
}
