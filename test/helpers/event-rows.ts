import type { EventRow } from '../../pipelines/events/event-row.ts'
import type { UploadRef } from '../../pipelines/events/writer-item.ts'

/** An `events` row of one upload with fixed device dimensions: what writer and dead-letter tests store. */
export function eventRow(
  uuid: string,
  up: UploadRef,
  o: { app?: string; eventName?: string } = {},
): EventRow {
  return {
    app_id: o.app ?? 'app',
    uuid,
    customer_id: 'c',
    event_name: o.eventName ?? 'e',
    event_time: up.recv,
    received_at: up.recv,
    attributes: { k: 'v' },
    ltv_change: 0,
    install_uuid: 'i',
    device_uuid: 'd',
    session_uuid: 's',
    country: 'DE',
    language: 'de',
    app_version: '1.0',
    os_version: '17',
    platform: 'iOS',
    model: 'iPhone',
    device_timezone: 'Europe/Berlin',
    source: 'server',
    transaction_id: up.tx,
  }
}
