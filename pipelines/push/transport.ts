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
/**
 * Deliveries of one batch of one request to one platform, as the batch's columns: the targets at
 * positions `at`. Delivery i is `{deliveryId: deliveryIdPrefix + installs[at[i]], installUuid:
 * installs[at[i]], customerId: customers[at[i]], pushToken: tokens[at[i]], message:
 * messages[message[at[i]]], …}`; no object per delivery is made.
 */
export interface DeliveryGroup {
  requestId: string
  /** The delivery id without the install: `${requestId}:` (`${requestId}~${generation}:` after 24 h). */
  deliveryIdPrefix: string
  campaignKey: string | null
  appId: string
  platform: PushPlatform
  attempt: number
  messages: readonly PushMessage[]
  installs: readonly string[]
  customers: readonly string[]
  tokens: readonly string[]
  message: readonly number[]
  at: readonly number[]
}
export interface PushTransport {
  readonly kind: 'file' | 'webhook' | 'apns' | 'fcm'
  /** One outcome per delivery, same order. Throws only when nothing could be attempted (then the whole batch is retried). */
  send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]>
  /**
   * Optional, for a transport whose outcome is the same for every delivery it writes together
   * (the file transport): the first try of these groups, one outcome per group, shared by all its
   * deliveries. Throws only when nothing could be attempted. Retries go through `send`.
   */
  sendGroups?(groups: readonly DeliveryGroup[]): Promise<DeliveryOutcome[]>
  close(): Promise<void>
}
/** Which transport delivers an app's pushes to a platform; undefined: none configured (the edge answers 403 naming the platform). */
export interface TransportResolver {
  transportFor(appId: string, platform: PushPlatform): Promise<PushTransport | undefined>
  /** The platforms the app can deliver to now (for the edge's 403 check). */
  platformsOf(appId: string): Promise<PushPlatform[]>
  close(): Promise<void>
}
