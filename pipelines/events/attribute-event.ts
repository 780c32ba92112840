import { customerKey } from './device-lookup.ts'
import type { RowParts } from './event-block.ts'
import { deviceTail, uploadHead, type DeviceDims, type PackedEvents } from './event-row.ts'

export interface AttributionContext {
  orgId: number
  /** The org owning each app id, or undefined for an unknown app. */
  appOrg: ReadonlyMap<string, number>
  devices: ReadonlyMap<string, DeviceDims>
}

export type AttributionResult =
  | { kind: 'ok'; line: number; app_id: string; uuid: string; device: DeviceDims }
  | {
      kind: 'reject'
      line: number
      uuid: string
      app_id: string
      reason: 'unknown_app' | 'unknown_customer'
      detail: string
    }

/**
 * Pure: event `i` of an upload is applied to the customer's last active device in that app; an
 * app outside the sender's org, or a customer with no device in the app, rejects the line.
 */
export function attributeEvent(events: PackedEvents, i: number, ctx: AttributionContext): AttributionResult {
  const app = events.app[i]!
  const line = events.line[i]!
  const uuid = events.uuid[i]!
  const owner = ctx.appOrg.get(app)
  if (owner === undefined || owner !== ctx.orgId) {
    return {
      kind: 'reject',
      line,
      uuid,
      app_id: app,
      reason: 'unknown_app',
      detail: `app_uuid ${app} is not an app of this organization`,
    }
  }
  const customer = events.customer[i]!
  const device = ctx.devices.get(customerKey(app, customer))
  if (!device) {
    return {
      kind: 'reject',
      line,
      uuid,
      app_id: app,
      reason: 'unknown_customer',
      detail: `customer ${customer} has no device in app ${app}`,
    }
  }
  return { kind: 'ok', line, app_id: app, uuid, device }
}

/**
 * The `events` rows of one server upload's attributed events, in RowBinary of `EVENT_COLUMNS`:
 * the upload's head for the event's app (`UPLOAD_COLUMNS`), the event's own values (`OWN_COLUMNS`,
 * a slice of the buffer the CPU pool wrote), and the device's tail (`DEVICE_DIMENSIONS`), copied
 * once into the event block. A head is written once per app of the upload; a tail once per device,
 * in `tails`, which the caller shares across the uploads of a batch.
 */
export function serverRows(
  events: PackedEvents,
  upload: { receivedAt: number; transactionId: string },
  tails: Map<DeviceDims, Buffer>,
) {
  const own = Buffer.from(events.own.buffer, events.own.byteOffset, events.own.byteLength)
  const heads = new Map<string, Buffer>()
  return (i: number, app: string, device: DeviceDims): RowParts => {
    let head = heads.get(app)
    if (!head) heads.set(app, (head = uploadHead(app, upload.receivedAt, 'server', upload.transactionId)))
    let tail = tails.get(device)
    if (!tail) tails.set(device, (tail = deviceTail(device)))
    return { head, source: own, start: i === 0 ? 0 : events.ownEnd[i - 1]!, end: events.ownEnd[i]!, tail }
  }
}
