import type { CompiledQuery } from '../../pipelines/audiences/compile-rules.ts'
import type { AudienceData, Counts, Member } from '../../pipelines/audiences/evaluate-rules.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import type { QueryEventRow } from '../../pipelines/query/evaluate-query.ts'

/** Milliseconds as the engine reads and writes DateTime64(3, 'UTC') text. */
export const engineTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')
/** A Query API evaluator's event as a row of `events` (or `events_ingest`), under `uuid`. */
export const queryEventRow = (e: QueryEventRow, uuid: string) => ({
  ...e,
  uuid,
  transaction_id: 'tx',
  event_time: engineTime(e.event_time),
  received_at: engineTime(e.event_time),
})
const fromEngineTime = (s: string) => Date.parse(`${s.replace(' ', 'T')}Z`)

/** Inserts the evaluator's rows into the store's tables (devices, events, sessions, profiles, invalid tokens). */
export async function insertAudienceData(store: Store, data: AudienceData): Promise<void> {
  if (data.devices.length > 0)
    await store.insert(
      'devices',
      data.devices.map((d) => ({
        ...d,
        device_uuid: d.install_uuid,
        last_active_at: engineTime(0),
        version: 1,
      })),
    )
  if (data.events.length > 0)
    await store.insert(
      'events',
      data.events.map((e, i) => ({
        ...e,
        uuid: `${e.install_uuid}-${i}`,
        event_time: engineTime(e.event_time),
        received_at: engineTime(e.event_time),
        source: 'sdk',
      })),
    )
  if (data.sessions.length > 0)
    await store.insert(
      'sessions',
      data.sessions.map((s) => ({ ...s, started_at: engineTime(s.started_at) })),
    )
  if (data.profiles.length > 0)
    await store.insert(
      'profiles',
      data.profiles.map((p) => ({
        ...p,
        org_id: 1,
        app_id: '',
        email: '',
        updated_at: engineTime(0),
        version: 1,
      })),
    )
  if (data.invalidPushTokens.length > 0)
    await store.insert(
      'invalid_push_tokens',
      data.invalidPushTokens.map((t) => ({
        ...t,
        install_uuid: '',
        transport: 'apns',
        reason: 'Unregistered',
        invalidated_at: engineTime(0),
      })),
    )
}

interface MemberRow extends Omit<Member, 'last_session_at'> {
  last_session_at: string | null
}

/** Runs a compiled members query; times back in milliseconds, as the evaluator gives them. */
export async function queryMembers(store: Store, q: CompiledQuery): Promise<Member[]> {
  const rows = await store.query<MemberRow>(q.sql, q.params)
  return rows.map((r) => ({
    ...r,
    has_push: Number(r.has_push),
    last_session_at: r.last_session_at === null ? null : fromEngineTime(r.last_session_at),
  }))
}

export async function queryCounts(store: Store, q: CompiledQuery): Promise<Counts> {
  const [row] = await store.query<Record<keyof Counts, string>>(q.sql, q.params)
  if (!row) throw new Error('counts query returned no row')
  return {
    user_count: Number(row.user_count),
    has_push: Number(row.has_push),
    seen_last_thirty: Number(row.seen_last_thirty),
  }
}
