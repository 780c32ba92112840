import type { ValidateContext } from '../../pipelines/events/validate-event.ts'

/** The server event lines' fixtures the validator's and the byte scanner's tests share. */
export const HOUR = 3_600_000
export const RECEIVED_AT = Date.UTC(2024, 0, 15, 12, 0, 0)
export const ctx: ValidateContext = {
  receivedAt: RECEIVED_AT,
  pastWindowMs: 72 * HOUR,
  futureWindowMs: 48 * HOUR,
}
export const UUID = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b'
export const SCHEMA_URL = 'https://events.example.com/schemas/events/v0.json'
/** One character, two UTF-16 code units. */
export const EMOJI = '\u{1F600}'
