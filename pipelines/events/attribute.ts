import type { ValidEvent } from './validate-event.ts'
import type { DeviceDims, EventRow } from './event-row.ts'
import { customerKey } from './attribution.ts'

export interface AttributionContext {
  orgId: number
  transactionId: string
  receivedAt: number
  /** The org owning each app id, or undefined for an unknown app. */
  appOrg: ReadonlyMap<string, number>
  devices: ReadonlyMap<string, DeviceDims>
}

export type AttributionResult =
  | { kind: 'ok'; row: EventRow; line: number }
  | {
      kind: 'reject'
      line: number
      uuid: string
      app_id: string
      reason: 'unknown_app' | 'unknown_customer'
      detail: string
    }

/**
 * Pure: an event is applied to the customer's last active device in that app and tagged with
 * that device's dimensions; an app outside the sender's org, or a customer with no device in the
 * app, rejects the line.
 */
export function attributeEvent(event: ValidEvent, ctx: AttributionContext): AttributionResult {
  const owner = ctx.appOrg.get(event.app_uuid)
  if (owner === undefined || owner !== ctx.orgId) {
    return {
      kind: 'reject',
      line: event.line,
      uuid: event.uuid,
      app_id: event.app_uuid,
      reason: 'unknown_app',
      detail: `app_uuid ${event.app_uuid} is not an app of this organization`,
    }
  }
  const device = ctx.devices.get(customerKey(event.app_uuid, event.customer_id))
  if (!device) {
    return {
      kind: 'reject',
      line: event.line,
      uuid: event.uuid,
      app_id: event.app_uuid,
      reason: 'unknown_customer',
      detail: `customer ${event.customer_id} has no device in app ${event.app_uuid}`,
    }
  }
  return {
    kind: 'ok',
    line: event.line,
    row: {
      app_id: event.app_uuid,
      uuid: event.uuid,
      customer_id: event.customer_id,
      event_name: event.event_name,
      event_time: event.event_time,
      received_at: ctx.receivedAt,
      attributes: event.attributes,
      ltv_change: event.ltv_change,
      install_uuid: device.install_uuid,
      device_uuid: device.device_uuid,
      session_uuid: device.session_uuid,
      country: device.country,
      language: device.language,
      app_version: device.app_version,
      os_version: device.os_version,
      platform: device.platform,
      model: device.model,
      device_timezone: device.device_timezone,
      source: 'server',
      transaction_id: ctx.transactionId,
    },
  }
}
