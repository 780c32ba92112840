import type { Store } from '../connectors/store/store.ts'
import { FILTER_BITS_SQL, KeyFilter, MIN_CAPACITY } from './key-filter.ts'

/**
 * The (app, uuid) keys stored in `events`, as a Bloom filter (key-filter.ts) the events writer
 * consults before the dedupe index. It is filled once, from the index, before the first batch, and
 * kept whole from then on: the writer adds every key it stores and every key its index repair
 * finds. That holds only where this process is the only writer of `events`: the embedded engine,
 * which one process owns. With a ClickHouse server, other workers store keys too, and every key is
 * looked up in the index instead.
 *
 * Filling costs the engine one pass over the index (about 2.5 s for 2M keys on 2 busy cores) and
 * no key crosses into JavaScript: ClickHouse computes the filter's bits itself.
 */
export class StoredKeys {
  private loading: Promise<KeyFilter> | undefined

  constructor(private readonly store: Store) {}

  filter(): Promise<KeyFilter> {
    if (!this.loading) {
      this.loading = this.load()
      // A failed load (the store down) is tried again by the next batch.
      this.loading.catch(() => (this.loading = undefined))
    }
    return this.loading
  }

  private async load(): Promise<KeyFilter> {
    const [count] = await this.store.query<{ n: string | number }>(
      'SELECT count() AS n FROM event_uuid_index',
    )
    const keys = Number(count?.n ?? 0)
    const filter = new KeyFilter(Math.max(MIN_CAPACITY, 2 * keys))
    if (keys === 0) return filter
    // Words grouped in chunks: a few hundred rows of arrays instead of millions of rows.
    const chunks = await this.store.query<{ words: number[]; masks: number[] }>(
      `SELECT intDiv(word, 8192) AS chunk, groupArray(word) AS words, groupArray(mask) AS masks
       FROM (${FILTER_BITS_SQL}) GROUP BY chunk`,
      { blocks: filter.firstLayerBlocks },
    )
    filter.fill(wordsOf(chunks), keys)
    return filter
  }
}

function* wordsOf(chunks: readonly { words: number[]; masks: number[] }[]): Generator<[number, number]> {
  for (const { words, masks } of chunks) for (let i = 0; i < words.length; i++) yield [words[i]!, masks[i]!]
}
