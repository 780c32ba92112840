import { z } from 'zod'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import { decodeJsonRecord } from '../failures/decode-record.ts'

/**
 * What goes on the exports topic: a request to bring one export file up to date, or to sweep
 * old files. Keyed by export id, so one export's requests are handled in order by one writer.
 *
 *   reason 'request'  an API request found no file, or a stale one: write it if still stale
 *          'hourly'   the hourly log job: write a completed hour if missing or stale
 *          'daily'    the daily refresh of `day`: write it unless a file of that refresh exists
 *          'admin'    a refresh asked for through the admin API: write it now
 */
const generate = z.object({
  v: z.literal(1),
  kind: z.literal('generate'),
  export_id: z.number().int().positive(),
  /** The hour (UTC start, ms) of a log export. */
  hour: z.number().int().nonnegative().optional(),
  reason: z.enum(['request', 'hourly', 'daily', 'admin']),
  /** daily: the refresh instant (ms); a file generated at or after it is this refresh's. */
  refresh_at: z.number().int().nonnegative().optional(),
  requested_at: z.number().int().nonnegative(),
})

const sweep = z.object({
  v: z.literal(1),
  kind: z.literal('sweep'),
  requested_at: z.number().int().nonnegative(),
})

const request = z.discriminatedUnion('kind', [generate, sweep])

export type GenerationRequest = z.infer<typeof generate>
export type SweepRequest = z.infer<typeof sweep>
export type ExportRequest = z.infer<typeof request>

export function encodeExportRequest(value: ExportRequest): ProduceMessage {
  const key = value.kind === 'generate' ? `export:${value.export_id}` : 'sweep'
  return { key, value: Buffer.from(JSON.stringify(value)) }
}

export function decodeExportRequest(
  record: Pick<BusRecord, 'value'>,
): { ok: true; request: ExportRequest } | { ok: false; reason: string } {
  const decoded = decodeJsonRecord(record.value, request, 'export request')
  return decoded.ok ? { ok: true, request: decoded.value } : decoded
}
