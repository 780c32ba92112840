import { afterAll, describe, expect, it } from 'vitest'
import { LocalLog } from '../../pipelines/connectors/bus/local-log/local-log.ts'
import { tempDir } from '../helpers/temp.ts'

describe('local log: explicit partitions', () => {
  const dirs: Awaited<ReturnType<typeof tempDir>>[] = []
  afterAll(async () => {
    for (const d of dirs) await d.cleanup()
  })

  it('puts a record in the partition it names, and refuses one out of range', async () => {
    const dir = await tempDir('log-partitions')
    dirs.push(dir)
    const log = LocalLog.open({ path: dir.path, partitions: 3 })
    expect(await log.partitionCount('blocks')).toBe(3)
    await log.produce('blocks', [
      { partition: 2, value: Buffer.from('two') },
      { partition: 0, value: Buffer.from('zero') },
      { partition: 2, value: Buffer.from('two again') },
    ])
    await expect(log.produce('blocks', [{ partition: 3, value: Buffer.from('x') }])).rejects.toThrow(
      /out of range/,
    )
    const stats = log.stats().topics.find((t) => t.topic === 'blocks')!
    expect(stats.partitions.map((p) => p.records)).toEqual([1, 0, 2])
    const seen: string[] = []
    const consumer = await log.consume({
      group: 'g',
      topics: ['blocks'],
      handler: async (batch) => {
        for (const r of batch.records) seen.push(`${batch.partition}:${r.offset}:${r.value.toString()}`)
      },
    })
    const deadline = Date.now() + 5000
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    await consumer.stop()
    expect(seen.sort()).toEqual(['0:0:zero', '2:0:two', '2:1:two again'])
    await log.close()
  })
})
