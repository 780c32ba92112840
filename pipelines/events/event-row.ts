/** A row of the `events` table exactly as inserted (JSONEachRow). Column names are a public contract. */
export interface EventRow {
  app_id: string
  uuid: string
  customer_id: string
  event_name: string
  /** ms since epoch; DateTime64(3) parses integers as milliseconds. */
  event_time: number
  received_at: number
  attributes: Record<string, string>
  ltv_change: number
  install_uuid: string
  device_uuid: string
  session_uuid: string
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  device_timezone: string
  source: 'server' | 'sdk'
  transaction_id: string
}

/** The dimensions of a device an event is attributed to. */
export interface DeviceDims {
  install_uuid: string
  device_uuid: string
  session_uuid: string
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  device_timezone: string
}

/** Headers of a record on the events topic: what the writer needs without parsing the row. */
export interface EventRecordHeaders {
  /** app id */
  a: string
  /** event uuid */
  u: string
  /** transaction id */
  t: string
  /** line number in the upload */
  l: string
  /** receipt time, ms */
  r: string
  /** org id */
  o: string
  /** source: server or sdk */
  s: 'server' | 'sdk'
}

export const eventKey = (appId: string, uuid: string) => `${appId}\n${uuid}`
