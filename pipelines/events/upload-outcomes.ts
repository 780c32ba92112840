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

/** The receipt row of a split upload: `forwarded` event lines go on to the writer, `direct` ones were stored. */
export function receiptRow(
  headers: UploadHeaders,
  counts: { lines: number; forwarded: number; direct: number; rejected: number },
  processedAt: number,
) {
  return {
    transaction_id: headers.tx,
    org_id: Number(headers.org),
    app_id: headers.app ?? '',
    source: headers.src,
    api_key: headers.key,
    received_at: Number(headers.recv),
    processed_at: processedAt,
    ...counts,
  }
}

export async function recordRejects(store: Store, rows: readonly RejectRow[]): Promise<void> {
  if (rows.length > 0) await store.insert('rejected_lines', rows)
}
