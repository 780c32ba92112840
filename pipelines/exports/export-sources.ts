import { readAudienceRows } from '../audiences/audience-reader.ts'
import type { Store } from '../connectors/store/store.ts'

/** Of these audience ids, those of live (not deleted) audiences. */
export async function liveAudienceIds(store: Store, ids: readonly number[]): Promise<Set<number>> {
  const rows = await readAudienceRows(store, ids)
  return new Set(rows.filter((r) => r.deleted_at === null).map((r) => r.id))
}
