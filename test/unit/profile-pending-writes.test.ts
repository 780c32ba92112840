import { describe, expect, it } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { PendingWrites } from '../../services/edge/profiles/pending-writes.ts'
import { manualClock } from '../helpers/manual-clock.ts'

/** A store that answers the applied-up-to query from a map the test controls. */
function fakeStore(applied: Map<string, number>) {
  let queries = 0
  const store = {
    query: async (_sql: string, params: { dbs: number[]; customers: string[] }) => {
      queries++
      const rows = []
      for (const db of params.dbs)
        for (const customer of params.customers) {
          const at = applied.get(`${db}:${customer}`)
          if (at !== undefined) rows.push({ profiledb_id: db, customer_id: customer, at })
        }
      return rows
    },
  } as unknown as Store
  return { store, queries: () => queries }
}

const key = { db: 1, customer: 'c' }

describe('PendingWrites', () => {
  it('stamps one key’s writes in strictly increasing order, one produce at a time', async () => {
    // The clock stands still: stamps must grow anyway.
    const pending = new PendingWrites({ clock: manualClock() })
    const order: string[] = []
    let inFlight = 0
    const stamps = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        pending.write(key, async (receivedAt) => {
          inFlight++
          expect(inFlight).toBe(1)
          order.push(`start ${i}`)
          // A turn of the event loop, in which a produce not serialised would start.
          await new Promise((r) => setImmediate(r))
          order.push(`end ${i}`)
          inFlight--
          return receivedAt
        }),
      ),
    )
    expect(order).toEqual([0, 1, 2, 3, 4].flatMap((i) => [`start ${i}`, `end ${i}`]))
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]!).toBeGreaterThan(stamps[i - 1]!)
    expect(pending.pendingFor([key])).toEqual([{ key, receivedAt: stamps[4] }])
  })

  it('other keys are not serialised behind a slow one', async () => {
    const pending = new PendingWrites()
    let release!: () => void
    const slow = pending.write(key, () => new Promise<void>((r) => (release = r)))
    await pending.write({ db: 1, customer: 'other' }, async () => undefined)
    release()
    await slow
  })

  it('a failed produce is not pending, and the next write still runs', async () => {
    const pending = new PendingWrites()
    await expect(pending.write(key, async () => Promise.reject(new Error('bus down')))).rejects.toThrow(
      'bus down',
    )
    expect(pending.pendingFor([key])).toEqual([])
    const at = await pending.write(key, async (receivedAt) => receivedAt)
    expect(pending.pendingFor([key])).toEqual([{ key, receivedAt: at }])
  })

  it('waits until the writer applied the write, then forgets it', async () => {
    const applied = new Map<string, number>()
    let at = 0
    // The writer applies the write while the reader sleeps for the second time.
    const clock = manualClock(1_700_000_000_000, () => {
      if (clock.slept.length === 2) applied.set('1:c', at)
    })
    const pending = new PendingWrites({ clock })
    const { store, queries } = fakeStore(applied)
    at = await pending.write(key, async (receivedAt) => receivedAt)
    expect(await pending.waitApplied(store, pending.pendingFor([key]), 2000)).toBe(true)
    expect(clock.slept).toEqual([5, 10])
    expect(queries()).toBe(3)
    expect(pending.pendingFor([key])).toEqual([])
    const before = queries()
    expect(await pending.waitApplied(store, pending.pendingFor([key]), 2000)).toBe(true)
    expect(queries()).toBe(before)
  })

  it('gives up after the timeout, and keeps the write pending', async () => {
    const clock = manualClock()
    const pending = new PendingWrites({ clock })
    const applied = new Map([['1:c', 0]])
    const { store } = fakeStore(applied)
    await pending.write(key, async () => undefined)
    const started = clock.now()
    expect(await pending.waitApplied(store, pending.pendingFor([key]), 60)).toBe(false)
    // Backing off 5, 10, 20 ms; the next 40 would pass the deadline, so it stops there.
    expect(clock.slept).toEqual([5, 10, 20])
    expect(clock.now() - started).toBeLessThanOrEqual(60)
    expect(pending.pendingFor([key])).toHaveLength(1)
  })

  it('lists pending writes by profile db', async () => {
    const pending = new PendingWrites()
    await pending.write({ db: 1, customer: 'a' }, async () => undefined)
    await pending.write({ db: 2, customer: 'b' }, async () => undefined)
    expect(pending.pendingInDbs([2]).map((w) => w.key)).toEqual([{ db: 2, customer: 'b' }])
  })

  it('forgets stamps older than forgetAfterMs', async () => {
    const clock = manualClock()
    const pending = new PendingWrites({ forgetAfterMs: 60_000, clock })
    await pending.write({ db: 1, customer: 'a' }, async () => undefined)
    clock.advance(30_000)
    await pending.write({ db: 1, customer: 'b' }, async () => undefined)
    clock.advance(30_001)
    await pending.write({ db: 1, customer: 'c' }, async () => undefined)
    expect(pending.pendingInDbs([1]).map((w) => w.key.customer)).toEqual(['b', 'c'])
  })

  it('forgets old stamps', async () => {
    const pending = new PendingWrites({ maxEntries: 2 })
    for (const customer of ['a', 'b', 'c']) await pending.write({ db: 1, customer }, async () => undefined)
    expect(pending.pendingInDbs([1]).map((w) => w.key.customer)).toEqual(['b', 'c'])
  })
})
