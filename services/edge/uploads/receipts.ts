import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { TransactionInfo } from './transaction-id.ts'
import { MAX_REJECTED_LINES_PER_UPLOAD } from '../../../pipelines/events/upload-outcomes.ts'

export interface RejectedLineView {
  line: number
  uuid: string | null
  reason: string
  detail: string
}

/**
 * When each stage of the server-side pipeline was done with the upload (ISO 8601): its body went to
 * the CPU pool, its events came back from it, its group was attributed, its group's events were
 * written (embedded: inserted; Kafka + ClickHouse: on the events topic), its receipt was recorded.
 * Receipts of SDK uploads, and of uploads split before these were kept, have none.
 */
export interface UploadStagesView {
  consumed_at: string
  parsed_at: string
  processed_at: string
  written_at: string
  recorded_at: string
}

export interface UploadReceipt {
  transaction_id: string
  state: 'queued' | 'processing' | 'done'
  received_at: string
  lines: number
  accepted: number
  rejected: number
  rejected_lines: RejectedLineView[]
  stages?: UploadStagesView
}

type StageMillis = Record<keyof UploadStagesView, number | string | null>

/**
 * The receipt of an upload, assembled from what the stages wrote: the splitter's receipt row
 * (lines, forwarded), the events stored under the transaction, and the rejected lines. Scoped by
 * org (and app for SDK uploads) on every query.
 */
export async function readReceipt(
  store: Store,
  transactionId: string,
  info: TransactionInfo,
  scope: { orgId: number; appId?: string },
): Promise<UploadReceipt> {
  const receivedAt = new Date(info.receivedAt).toISOString()
  const receipts = await store.query<
    {
      lines: number
      forwarded: number
      direct: number
      rejected: number
      app_id: string
    } & StageMillis
  >(
    `SELECT lines, forwarded, direct, rejected, app_id,
            toUnixTimestamp64Milli(consumed_at) AS consumed_at, toUnixTimestamp64Milli(parsed_at) AS parsed_at,
            toUnixTimestamp64Milli(processed_at) AS processed_at, toUnixTimestamp64Milli(written_at) AS written_at,
            toUnixTimestamp64Milli(recorded_at) AS recorded_at
     FROM upload_receipts FINAL
     WHERE transaction_id = {tx:String} AND org_id = {org:UInt64}`,
    { tx: transactionId, org: scope.orgId },
  )
  const receipt = receipts[0]
  if (!receipt || (scope.appId !== undefined && receipt.app_id !== scope.appId)) {
    return {
      transaction_id: transactionId,
      state: 'queued',
      received_at: receivedAt,
      lines: 0,
      accepted: 0,
      rejected: 0,
      rejected_lines: [],
    }
  }
  // Events forwarded to the writer are counted where they are stored, with the writer's
  // duplicates; a receipt that forwarded nothing (events the splitter stored itself, or none)
  // counts everything in its row, so only its rejected lines are read, and only if there are any.
  const forwarded = Number(receipt.forwarded)
  const [stored, duplicated] =
    forwarded > 0
      ? await Promise.all([
          countStored(store, transactionId, info),
          countDuplicates(store, transactionId, scope),
        ])
      : [0, 0]
  const rejected = Number(receipt.rejected) + duplicated
  const rejectedRows =
    rejected > 0
      ? await store.query<RejectedLineView>(
          `SELECT line, uuid, reason, detail FROM rejected_lines FINAL
           WHERE transaction_id = {tx:String} AND org_id = {org:UInt64} ORDER BY line LIMIT {max:UInt32}`,
          { tx: transactionId, org: scope.orgId, max: MAX_REJECTED_LINES_PER_UPLOAD },
        )
      : []
  const done = stored + duplicated >= forwarded
  const accepted = stored + Number(receipt.direct)
  const stages = stagesView(receipt)
  return {
    transaction_id: transactionId,
    state: done ? 'done' : 'processing',
    received_at: receivedAt,
    lines: Number(receipt.lines),
    accepted,
    rejected,
    rejected_lines: rejectedRows.map((r) => ({
      line: Number(r.line),
      uuid: r.uuid,
      reason: r.reason,
      detail: r.detail,
    })),
    ...(stages ? { stages } : {}),
  }
}

/** The stage times of a receipt row, if it has them all. */
function stagesView(row: StageMillis): UploadStagesView | undefined {
  const iso = (ms: number | string | null) => (ms === null ? undefined : new Date(Number(ms)).toISOString())
  const view = {
    consumed_at: iso(row.consumed_at),
    parsed_at: iso(row.parsed_at),
    processed_at: iso(row.processed_at),
    written_at: iso(row.written_at),
    recorded_at: iso(row.recorded_at),
  }
  return Object.values(view).every((v) => v !== undefined) ? (view as UploadStagesView) : undefined
}

/** The events stored under the transaction (it is stamped with the upload's receipt time). */
async function countStored(store: Store, transactionId: string, info: TransactionInfo): Promise<number> {
  const [row] = await store.query<{ n: number | string }>(
    `SELECT count() AS n FROM events
     WHERE received_at = fromUnixTimestamp64Milli({recv:Int64}, 'UTC') AND transaction_id = {tx:String}`,
    { recv: info.receivedAt, tx: transactionId },
  )
  return Number(row?.n ?? 0)
}

/**
 * The writer's duplicates of the transaction: the splitter counted every line it rejected; the
 * writer adds a row per duplicate. Only the first rows are listed, so a receipt stays small
 * whatever the upload held.
 */
async function countDuplicates(
  store: Store,
  transactionId: string,
  scope: { orgId: number },
): Promise<number> {
  const [row] = await store.query<{ n: number | string }>(
    `SELECT count() AS n FROM rejected_lines FINAL
     WHERE transaction_id = {tx:String} AND org_id = {org:UInt64} AND reason = 'duplicate'`,
    { tx: transactionId, org: scope.orgId },
  )
  return Number(row?.n ?? 0)
}
