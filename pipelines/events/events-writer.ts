import type { RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { decodeBlock } from './event-block.ts'
import { eventStore, type EventStore, type EventStoreDeps } from './store-events.ts'
import { recordRejects } from './upload-outcomes.ts'
import type { WriterItem } from './writer-item.ts'

/**
 * Stage 2 of ingestion where events travel on the events topic: the single owner of a partition of
 * (app, uuid) keys stores each event once. Events arrive in blocks routed by app + uuid, so no
 * other consumer can be storing the same uuid at the same time; the EventStore does the rest.
 */
export function eventsWriter(deps: EventStoreDeps | { store: Store; events: EventStore }) {
  const events = 'events' in deps ? deps.events : eventStore(deps)
  return async (batch: RecordBatch): Promise<StageReport> => {
    const { items, report } = decodeBatch(batch)
    if (items.length === 0) return report
    const duplicates = await events.write(items, {
      topic: batch.topic,
      partition: batch.partition,
      first: batch.records[0]!.offset,
      last: batch.records[batch.records.length - 1]!.offset,
    })
    await recordRejects(deps.store, duplicates)
    return report
  }
}

/**
 * Each record decoded on its own: a block that does not decode can never be written, so it is
 * reported as a dead letter (kept with its error) instead of failing, on every attempt, the whole
 * batch and the partition behind it.
 */
function decodeBatch(batch: RecordBatch): { items: WriterItem[]; report: StageReport } {
  const items: WriterItem[] = []
  const report: StageReport = { outcomes: [] }
  for (const record of batch.records) {
    let decoded: WriterItem[]
    try {
      decoded = decodeBlock(record.value)
    } catch (err) {
      const error = new PermanentError('undecodable event block', { cause: err })
      report.outcomes.push({ record, outcome: deadLetter(error) })
      continue
    }
    for (const item of decoded) items.push(item)
  }
  return { items, report }
}
