import { gunzipBounded } from '../events/gzip.ts'
import { EventPacker, type PackedEvents } from '../events/event-row.ts'
import { EventLineScanner } from '../events/scan-event-line.ts'
import type { RejectedLine } from '../events/line-checks.ts'
import { validateEventBody, type EventRejectReason } from '../events/validate-event.ts'
import { validateSdkBody, type SdkRejectReason, type SdkRow } from '../sdk/validate-sdk-row.ts'

/** CPU-heavy, pure work run on the piscina pool: inflate, split, parse and validate upload bodies. */
export type CpuTask =
  | {
      kind: 'server-upload'
      body: Uint8Array
      encoding: 'gzip' | 'identity'
      receivedAt: number
      pastWindowMs: number
      futureWindowMs: number
      maxInflatedBytes: number
      maxRejects: number
    }
  | {
      kind: 'sdk-upload'
      body: Uint8Array
      encoding: 'gzip' | 'identity'
      receivedAt: number
      maxInflatedBytes: number
      maxRejects: number
    }

/** `rejects` holds the first `maxRejects` rejected lines; `rejected` counts them all. */
export type CpuResult =
  | {
      kind: 'server-upload'
      events: PackedEvents
      rejects: RejectedLine<EventRejectReason>[]
      rejected: number
      lines: number
    }
  | {
      kind: 'sdk-upload'
      rows: SdkRow[]
      rejects: RejectedLine<SdkRejectReason>[]
      rejected: number
      lines: number
    }
  | { kind: 'unreadable'; reason: 'invalid_gzip' | 'too_large'; detail: string }

// A typical event line's size, for sizing the packed buffer once (it grows if need be).
const APPROX_LINE_BYTES = 300

/** Runs tasks off the event loop (the worker's thread pool: services/cpu-pool/pool.ts). */
export interface CpuRunner {
  run(task: CpuTask): Promise<CpuResult>
}

export default function runTask(task: CpuTask): CpuResult {
  let body: Buffer
  try {
    body = task.encoding === 'gzip' ? gunzipBounded(task.body, task.maxInflatedBytes) : Buffer.from(task.body)
  } catch (err) {
    const tooLarge =
      err instanceof RangeError || (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE'
    return {
      kind: 'unreadable',
      reason: tooLarge ? 'too_large' : 'invalid_gzip',
      detail: tooLarge ? 'body inflates past the configured limit' : 'body is not valid gzip',
    }
  }
  if (task.kind === 'server-upload') {
    // Each event packed as soon as its line is checked (EventPacker says why).
    const packer = new EventPacker(Math.round(body.length / APPROX_LINE_BYTES))
    const window = {
      receivedAt: task.receivedAt,
      pastWindowMs: task.pastWindowMs,
      futureWindowMs: task.futureWindowMs,
    }
    // Lines of the usual shape are packed from their bytes; the rest parsed and checked in full.
    const result = validateEventBody(
      body,
      { ...window, maxRejects: task.maxRejects },
      (event) => packer.add(event),
      new EventLineScanner(window, packer),
    )
    return {
      kind: 'server-upload',
      events: packer.packed(),
      rejects: result.rejects,
      rejected: result.rejected,
      lines: result.lines,
    }
  }
  const result = validateSdkBody(body, { receivedAt: task.receivedAt, maxRejects: task.maxRejects })
  return { kind: 'sdk-upload', ...result }
}
