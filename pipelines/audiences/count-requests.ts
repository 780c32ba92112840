import { z } from 'zod'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import { decodeJsonRecord } from '../failures/decode-record.ts'

/**
 * A request to count an audience, on the audience-counts topic: from the edge that created or
 * updated it or was asked to recompute it, and from the scheduled refresh. Keyed by audience id,
 * so one counter owns each audience and its counts are computed in request order.
 */
export interface CountRequest {
  v: 1
  audience_id: number
  org_id: number
  app_id: string
  /** When it was asked for (ms; the refresh's period start): the counts row records the latest served. */
  requested_at: number
  reason: 'create' | 'update' | 'recompute' | 'refresh'
}

const schema = z.object({
  v: z.literal(1),
  audience_id: z.number().int().positive(),
  org_id: z.number().int().positive(),
  app_id: z.string().min(1).max(128),
  requested_at: z.number().int().nonnegative(),
  reason: z.enum(['create', 'update', 'recompute', 'refresh']),
})

export function encodeCountRequest(request: CountRequest): ProduceMessage {
  return { key: String(request.audience_id), value: Buffer.from(JSON.stringify(request)) }
}

export function decodeCountRequest(
  record: Pick<BusRecord, 'value'>,
): { ok: true; request: CountRequest } | { ok: false; reason: string } {
  const decoded = decodeJsonRecord(record.value, schema, 'count request')
  return decoded.ok ? { ok: true, request: decoded.value } : decoded
}
