import { describe, expect, it } from 'vitest'
import { CoalescingSender } from '../../pipelines/connectors/bus/kafka/coalescing-sender.ts'
import { fetchLimits } from '../../pipelines/connectors/bus/kafka/group-consumer.ts'

interface Msg {
  id: string
  bytes: number
}

/** A transport whose requests stay open until the test ends them, recording what each carried. */
function heldTransport() {
  const requests: { topic: string; ids: string[]; end: (err?: Error) => void }[] = []
  const sendNow = (topic: string, messages: Msg[]) =>
    new Promise<void>((resolve, reject) => {
      requests.push({
        topic,
        ids: messages.map((m) => m.id),
        end: (err) => (err ? reject(err) : resolve()),
      })
    })
  return { requests, sendNow }
}

const flush = () => new Promise((resolve) => setImmediate(resolve))

describe('coalescing produce requests', () => {
  it('sends at once below the in-flight bound, then sends what waited as one request per group', async () => {
    const { requests, sendNow } = heldTransport()
    const sender = new CoalescingSender<Msg>(sendNow, {
      maxInFlight: 2,
      maxBytes: 1000,
      size: (m) => m.bytes,
    })
    const settled: string[] = []
    const send = (topic: string, id: string, bytes = 100) =>
      sender.send(topic, [{ id, bytes }]).then(
        () => settled.push(id),
        (err: Error) => settled.push(`${id}: ${err.message}`),
      )
    const all = [
      send('t', 'a'),
      send('t', 'b'),
      send('t', 'c'),
      send('t', 'd'),
      send('t', 'e', 900),
      send('u', 'x'),
    ]
    await flush()
    // a and b go at once; c, d wait together, e (past 1000 bytes with them) in a group of its own;
    // another topic has its own bound.
    expect(requests.map((r) => [r.topic, r.ids])).toEqual([
      ['t', ['a']],
      ['t', ['b']],
      ['u', ['x']],
    ])
    requests[0]!.end()
    await flush()
    expect(settled).toEqual(['a'])
    expect(requests.map((r) => r.ids)).toEqual([['a'], ['b'], ['x'], ['c', 'd']])
    // A failed request fails every send it carried, and the next group still goes.
    requests[3]!.end(new Error('broker down'))
    await flush()
    expect(settled).toEqual(['a', 'c: broker down', 'd: broker down'])
    expect(requests.map((r) => r.ids)).toEqual([['a'], ['b'], ['x'], ['c', 'd'], ['e']])
    for (const r of requests.slice(1)) r.end()
    await Promise.all(all)
    expect(settled.sort()).toEqual(['a', 'b', 'c: broker down', 'd: broker down', 'e', 'x'])
  })

  it('sends nothing for an empty send', async () => {
    const { requests, sendNow } = heldTransport()
    const sender = new CoalescingSender<Msg>(sendNow, { maxInFlight: 1, maxBytes: 10, size: (m) => m.bytes })
    await sender.send('t', [])
    expect(requests).toHaveLength(0)
  })
})

describe("the consumer's fetch limits", () => {
  it('fetch at least a whole batch of the stage per partition, two per fetch, never under kafkajs defaults', () => {
    expect(fetchLimits(8 * 1024 * 1024)).toEqual({
      maxBytesPerPartition: 8 * 1024 * 1024,
      maxBytes: 16 * 1024 * 1024,
    })
    expect(fetchLimits(64 * 1024)).toEqual({ maxBytesPerPartition: 1024 * 1024, maxBytes: 10 * 1024 * 1024 })
    expect(fetchLimits(undefined)).toEqual({ maxBytesPerPartition: 1024 * 1024, maxBytes: 10 * 1024 * 1024 })
  })
})
