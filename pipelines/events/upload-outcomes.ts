import type { Store } from '../connectors/store/store.ts'
import type { UploadHeaders } from './upload-headers.ts'

/**
 * What the stages record about an upload: each rejected line (`rejected_lines`) and, once its
 * lines are split, its receipt row (`upload_receipts`). Both tables are ReplacingMergeTree by
 * natural keys, so a replayed batch rewrites the same rows.
 */

/**
 * Rejected lines recorded with their reason per upload (the first ones); the receipt counts the
 * rest. A 2 KB gzip body can hold a million bad lines: their reasons would cost gigabytes of
 * memory and a receipt of a hundred megabytes, and say nothing the first thousand do not.
 */
export const MAX_REJECTED_LINES_PER_UPLOAD = 1000

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

export function rejectRow(
  headers: UploadHeaders,
  line: number,
  uuid: string | null,
  reason: string,
  detail: string,
  appId = headers.app ?? '',
): RejectRow {
  return {
    transaction_id: headers.tx,
    org_id: Number(headers.org),
    app_id: appId,
    source: headers.src,
    line,
    uuid,
    reason,
    detail,
    received_at: Number(headers.recv),
  }
}

/**
 * When the server-side stages were done with an upload (epoch ms, migration 030): the splitter
 * handed its body to the CPU pool (`consumed`), the pool gave its events back (`parsed`), its
 * group's write returned (`written`). `recorded`, when its batch's receipts insert began, is set on
 * the row just before that insert (stampRecorded).
 */
export interface UploadStages {
  consumed: number
  parsed: number
  written: number
}

/** The receipt row of a split upload: `forwarded` event lines go on to the writer, `direct` ones were stored. */
export function receiptRow(
  headers: UploadHeaders,
  counts: { lines: number; forwarded: number; direct: number; rejected: number },
  processedAt: number,
  stages?: UploadStages,
) {
  return {
    transaction_id: headers.tx,
    org_id: Number(headers.org),
    app_id: headers.app ?? '',
    source: headers.src,
    api_key: headers.key,
    received_at: Number(headers.recv),
    processed_at: processedAt,
    ...(stages ? { consumed_at: stages.consumed, parsed_at: stages.parsed, written_at: stages.written } : {}),
    ...counts,
  }
}

export type ReceiptRow = ReturnType<typeof receiptRow> & { recorded_at?: number }

/** Stamps a batch's receipt rows with the moment their insert begins (`recorded_at`). */
export function stampRecorded(rows: ReceiptRow[], at: number): ReceiptRow[] {
  for (const row of rows) row.recorded_at = at
  return rows
}

export async function recordRejects(store: Store, rows: readonly RejectRow[]): Promise<void> {
  if (rows.length > 0) await store.insert('rejected_lines', rows)
}
