import type { DeviceDims } from '../events/event-row.ts'
import type { SdkRow } from './validate-sdk-row.ts'

/** A row of `devices`: the last known state of one install of an app. */
export interface DeviceState {
  app_id: string
  install_uuid: string
  device_uuid: string
  customer_id: string
  last_active_at: number
  app_version: string
  os_version: string
  platform: string
  model: string
  country: string
  language: string
  device_timezone: string
  push_token: string
  push_status: string
  /** IDFA / GAID as last reported (the idfa and gaid audience exports), and the user's ad-tracking limit. */
  advertising_id: string
  limit_advertising: 0 | 1
  version: number
}

/** A row of `customer_devices`: a customer's last active device in an app, with its dimensions. */
export interface CustomerState extends DeviceDims {
  app_id: string
  customer_id: string
  last_active_at: number
  first_session_at: number | null
  last_session_at: number | null
  push_token: string
  push_status: string
  user_type: string
  version: number
}

const DIMENSIONS = [
  ['app_version', 'app_ver'],
  ['os_version', 'os_ver'],
  ['platform', 'platform'],
  ['model', 'model'],
  ['country', 'country'],
  ['language', 'language'],
  ['device_timezone', 'device_timezone'],
  ['push_token', 'push_token'],
  ['push_status', 'push_status'],
] as const

export const deviceKey = (app: string, install: string) => `${app}\n${install}`
export const customerStateKey = (app: string, customer: string) => `${app}\n${customer}`

export function emptyDevice(app: string, install: string): DeviceState {
  return {
    app_id: app,
    install_uuid: install,
    device_uuid: '',
    customer_id: '',
    last_active_at: 0,
    app_version: '',
    os_version: '',
    platform: '',
    model: '',
    country: '',
    language: '',
    device_timezone: '',
    push_token: '',
    push_status: '',
    advertising_id: '',
    limit_advertising: 0,
    version: 0,
  }
}

/**
 * Apply one SDK row to its device (pure; returns a new state). Only rows at least as recent as the
 * state move it: a late upload of old offline data does not overwrite newer dimensions. Empty
 * fields never erase known values. Replaying the same rows gives the same state.
 */
export function applyRowToDevice(device: DeviceState, row: SdkRow): DeviceState {
  if (row.at_millis < device.last_active_at) return device
  const next: DeviceState = { ...device, last_active_at: row.at_millis }
  if (row.device_uuid) next.device_uuid = row.device_uuid
  if (row.customer_id) next.customer_id = row.customer_id
  for (const [column, field] of DIMENSIONS) if (row[field]) next[column] = row[field]
  // The limit comes with the id it applies to: a row without an id says nothing about either.
  if (row.advertising_id) {
    next.advertising_id = row.advertising_id
    next.limit_advertising = row.limit_advertising ? 1 : 0
  }
  return next
}

/**
 * Apply one SDK row of a customer to the customer's state, given the device state after the row:
 * the latest active device wins, with all its dimensions; sessions move the first/last session
 * dates (min/max, so replays and out-of-order uploads converge).
 */
export function applyRowToCustomer(
  current: CustomerState | undefined,
  row: SdkRow,
  device: DeviceState,
  app: string,
  customer: string,
): CustomerState {
  const base: CustomerState = current ?? {
    app_id: app,
    customer_id: customer,
    install_uuid: '',
    device_uuid: '',
    session_uuid: '',
    last_active_at: 0,
    first_session_at: null,
    last_session_at: null,
    app_version: '',
    os_version: '',
    platform: '',
    model: '',
    country: '',
    language: '',
    device_timezone: '',
    push_token: '',
    push_status: '',
    user_type: '',
    version: 0,
  }
  const next: CustomerState = { ...base }
  if (row.type === 's') {
    next.first_session_at =
      next.first_session_at === null ? row.at_millis : Math.min(next.first_session_at, row.at_millis)
    next.last_session_at =
      next.last_session_at === null ? row.at_millis : Math.max(next.last_session_at, row.at_millis)
  }
  if (row.at_millis >= base.last_active_at) {
    next.last_active_at = row.at_millis
    next.install_uuid = device.install_uuid
    next.device_uuid = device.device_uuid
    if (row.session_uuid) next.session_uuid = row.session_uuid
    if (row.user_type) next.user_type = row.user_type
    for (const [column] of DIMENSIONS) next[column] = device[column]
  }
  return next
}
