import type { Store } from '../connectors/store/store.ts'

/** A rejected line as recorded in `rejected_lines`. */
export interface RejectRow {
  transaction_id: string
  org_id: number
  app_id: string
  source: 'server' | 'sdk'
  line: number
  uuid: string | null
  reason: string
  detail: string
  received_at: number
}

export async function recordRejects(store: Store, rows: readonly RejectRow[]): Promise<void> {
  if (rows.length > 0) await store.insert('rejected_lines', rows)
}
