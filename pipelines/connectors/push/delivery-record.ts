import { buildApnsPayload } from '../../push/apns-payload.ts'
import { buildFcmMessage } from '../../push/fcm-payload.ts'
import type { PushDelivery } from '../../push/transport.ts'

/**
 * One delivery as the file and webhook transports hand it on (a JSON line, or an element of a
 * webhook body's `deliveries`): the delivery's fields in snake_case, and `payload`, what APNs (iOS)
 * or FCM (Android) would have received for it, so a receiver can forward it as it is.
 */
export interface DeliveryRecord {
  delivery_id: string
  request_id: string
  campaign_key: string | null
  app_id: string
  install_uuid: string
  customer_id: string
  platform: PushDelivery['platform']
  push_token: string
  attempt: number
  message: PushDelivery['message']
  payload: Record<string, unknown>
}

export function deliveryRecord(d: PushDelivery): DeliveryRecord {
  return {
    delivery_id: d.deliveryId,
    request_id: d.requestId,
    campaign_key: d.campaignKey,
    app_id: d.appId,
    install_uuid: d.installUuid,
    customer_id: d.customerId,
    platform: d.platform,
    push_token: d.pushToken,
    attempt: d.attempt,
    message: d.message,
    payload:
      d.platform === 'ios'
        ? buildApnsPayload(d.message)
        : { ...buildFcmMessage(d.message, d.pushToken, 'android') },
  }
}
