import type { Bus } from '../connectors/bus/bus.ts'
import type { DeadLetterStore } from './dead-letters.ts'

export interface Replayed {
  id: string
  topic: string
  partition: number
  key: string | null
  headers: Record<string, string>
  value_bytes: number
  replayed_at: string
}

/**
 * Produces a dead letter's record again onto its topic, with its key and headers, so an operator can
 * retry it after a fix. It goes back to the partition it came from, not the key's: some records
 * (event blocks) carry items that belong to that partition's owner and have no key. Replaying twice
 * is harmless: every sink is idempotent by a natural key. Undefined when the id is unknown.
 */
export async function replayDeadLetter(
  deps: { deadLetters: DeadLetterStore; bus: Bus; now?: () => number },
  id: string,
): Promise<Replayed | undefined> {
  const letter = await deps.deadLetters.get(id)
  if (!letter || letter.value === null) return undefined
  await deps.bus.produce(letter.topic, [
    {
      ...(letter.key === null ? {} : { key: letter.key }),
      partition: letter.partition,
      value: Buffer.from(letter.value, 'base64'),
      headers: letter.headers,
    },
  ])
  const at = (deps.now ?? Date.now)()
  await deps.deadLetters.markReplayed(letter, at)
  return {
    id: letter.id,
    topic: letter.topic,
    partition: letter.partition,
    key: letter.key,
    headers: letter.headers,
    value_bytes: letter.value_bytes,
    replayed_at: new Date(at).toISOString(),
  }
}
