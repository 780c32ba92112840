import type { ProfileValue, ProfileValueType } from '../../schemas/profiles.ts'
import type { Attributes } from './apply-changes.ts'
import { toWire } from './apply-changes.ts'

/**
 * How a profile version is stored in `profiles`: `attributes` is the JSON a GET returns (integers
 * as numbers, dates as `YYYY-MM-DD`, sets as arrays), and `attribute_types` tells dates from
 * strings, so analysts and the writer read the same typed values back.
 */
export interface ProfileRow {
  profiledb_id: number
  org_id: number
  app_id: string
  customer_id: string
  attributes: string
  attribute_types: Record<string, ProfileValueType>
  email: string
  deleted: 0 | 1
  updated_at: number
  source_partition: number
  source_offset: string
  version: number
}

export function toProfileRow(
  base: Omit<ProfileRow, 'attributes' | 'attribute_types' | 'email' | 'deleted'>,
  attributes: Attributes | null,
): ProfileRow {
  const types: Record<string, ProfileValueType> = {}
  for (const [key, value] of attributes ?? []) types[key] = value.type
  const email = attributes?.get('$email')
  return {
    ...base,
    attributes: JSON.stringify(attributes ? toWire(attributes) : {}),
    attribute_types: types,
    // Lookups by $email are case-insensitive: the column holds the address lowercased.
    email: email?.type === 'string' ? email.value.toLowerCase() : '',
    deleted: attributes ? 0 : 1,
  }
}

/** Decode the stored JSON; a type missing from the map is inferred from the JSON value. */
export function attributesFromRow(json: string, types: Record<string, string>): Map<string, ProfileValue> {
  const parsed = JSON.parse(json) as Record<string, unknown>
  const out = new Map<string, ProfileValue>()
  for (const [key, value] of Object.entries(parsed)) {
    const type = types[key]
    if (Array.isArray(value)) out.set(key, { type: 'set', value: value as string[] | number[] })
    else if (typeof value === 'number') out.set(key, { type: 'integer', value })
    else if (typeof value === 'string') out.set(key, { type: type === 'date' ? 'date' : 'string', value })
  }
  return out
}
