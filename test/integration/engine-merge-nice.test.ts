import { readdirSync, readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { loadConfig } from '../../services/config.ts'
import { tempDir } from '../helpers/temp.ts'

/** The nice value of every thread of this process now running under `comm`. */
function niceOfThreads(comm: string): number[] {
  const found: number[] = []
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    } catch {
      continue // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    // Fields after the name, from `state` (field 3): nice is field 19.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (name === comm) found.push(Number(fields[16]))
  }
  return found
}

// The process's one embedded engine takes its server settings from the first connection: this
// file opens it with a merge nice value and checks the engine, and its merge threads, run with it.
describe('the embedded engine’s merge threads yield the CPU', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('merge-nice')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path, 'sluice', { mergeNice: 7 })
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  it('defaults to 0 and refuses a value outside 0-19', async () => {
    expect(loadConfig({}).SLUICE_ENGINE_MERGE_NICE).toBe(0)
    expect(() => loadConfig({ SLUICE_ENGINE_MERGE_NICE: '20' })).toThrow(/SLUICE_ENGINE_MERGE_NICE/)
    await expect(ChdbStore.open('/nonexistent-never-created', 'sluice', { mergeNice: -1 })).rejects.toThrow(
      /mergeNice must be an integer 0-19/,
    )
  })

  it('starts the engine with the value, and its background merges run at it', async () => {
    const [setting] = await store.query<{ value: string }>(
      "SELECT value FROM system.server_settings WHERE name = 'os_threads_nice_value_merge_mutate'",
    )
    expect(setting?.value).toBe('7')

    await store.command('CREATE TABLE merged (n UInt64, s String) ENGINE = MergeTree ORDER BY n')
    const seen = new Set<number>()
    let inserting = true
    const inserts = (async () => {
      // Parts enough that the background pool merges while they arrive.
      for (let i = 0; i < 40 && !seen.has(7); i++)
        await store.command(
          'INSERT INTO merged SELECT number, toString(number) FROM numbers({from:UInt64}, 200000)',
          { from: i * 200_000 },
        )
      inserting = false
    })()
    const deadline = Date.now() + 60_000
    while ((inserting || seen.size === 0) && !seen.has(7) && Date.now() < deadline) {
      for (const nice of niceOfThreads('MergeMutate')) seen.add(nice)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    await inserts
    expect([...seen]).toContain(7)
    const [parts] = await store.query<{ rows: string }>(
      "SELECT sum(rows) AS rows FROM system.parts WHERE database = currentDatabase() AND table = 'merged' AND active",
    )
    expect(Number(parts?.rows)).toBeGreaterThan(0)
  })
})
