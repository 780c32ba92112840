import { appOf, customerOf, deviceTail, uploadHead, type DeviceDims, type PackedEvents } from './event-row.ts'
import type { RowParts } from './writer-item.ts'

export interface AttributionContext {
  orgId: number
  /** The org owning each app id, or undefined for an unknown app. */
  appOrg: ReadonlyMap<string, number>
  /** Each customer's last active device, by app, then customer id. */
  devices: ReadonlyMap<string, ReadonlyMap<string, DeviceDims>>
}

export interface AttributionReject {
  kind: 'reject'
  line: number
  uuid: string
  app_id: string
  reason: 'unknown_app' | 'unknown_customer'
  detail: string
}

export const isAttributionReject = (r: DeviceDims | AttributionReject): r is AttributionReject =>
  (r as AttributionReject).kind === 'reject'

/**
 * Pure: event `i` of an upload is applied to the customer's last active device in that app, which
 * it returns; an app outside the sender's org, or a customer with no device in the app, rejects
 * the line. An attributed event costs no object and no key string: this runs for every event.
 */
export function attributeEvent(
  events: PackedEvents,
  i: number,
  ctx: AttributionContext,
): DeviceDims | AttributionReject {
  const app = appOf(events, i)
  const owner = ctx.appOrg.get(app)
  if (owner === undefined || owner !== ctx.orgId) {
    return {
      kind: 'reject',
      line: events.line[i]!,
      uuid: events.uuid[i]!,
      app_id: app,
      reason: 'unknown_app',
      detail: `app_uuid ${app} is not an app of this organization`,
    }
  }
  const customer = customerOf(events, i)
  const device = ctx.devices.get(app)?.get(customer)
  if (!device) {
    return {
      kind: 'reject',
      line: events.line[i]!,
      uuid: events.uuid[i]!,
      app_id: app,
      reason: 'unknown_customer',
      detail: `customer ${customer} has no device in app ${app}`,
    }
  }
  return device
}

/**
 * The `events` rows of one server upload's attributed events, in RowBinary of `EVENT_COLUMNS`:
 * the upload's head for the event's app (`UPLOAD_COLUMNS`), the event's own values (`OWN_COLUMNS`,
 * a slice of the buffer the CPU pool wrote), and the device's tail (`DEVICE_DIMENSIONS`), copied
 * once into the event block. A head is written once per app of the upload; a tail once per device,
 * in `tails`, which the caller shares across the uploads of a batch. Given `into`, the parts are
 * written into it (the event store's item, which carries its row itself) instead of a new object.
 */
export function serverRows(
  events: PackedEvents,
  upload: { receivedAt: number; transactionId: string },
  tails: Map<DeviceDims, Buffer>,
) {
  const own = Buffer.from(events.own.buffer, events.own.byteOffset, events.own.byteLength)
  const heads = new Map<string, Buffer>()
  return (i: number, app: string, device: DeviceDims, into?: RowParts): RowParts => {
    let head = heads.get(app)
    if (!head) heads.set(app, (head = uploadHead(app, upload.receivedAt, 'server', upload.transactionId)))
    let tail = tails.get(device)
    if (!tail) tails.set(device, (tail = deviceTail(device)))
    const start = i === 0 ? 0 : events.ownEnd[i - 1]!
    const end = events.ownEnd[i]!
    if (!into) return { head, source: own, start, end, tail }
    into.head = head
    into.source = own
    into.start = start
    into.end = end
    into.tail = tail
    return into
  }
}
