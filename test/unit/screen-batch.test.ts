import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { classifyBatch } from '../../pipelines/events/classify-stored.ts'
import { eventKey } from '../../pipelines/events/event-row.ts'
import { KeyFilter, keyHashes } from '../../pipelines/events/key-filter.ts'
import { decideScreened, Screened, screenBatch } from '../../pipelines/events/screen-batch.ts'
import type { WriterItem } from '../../pipelines/events/writer-item.ts'

const item = (app: string, uuid: string, tx: string, line: number): WriterItem => ({
  app,
  uuid,
  upload: { tx, recv: 0, org: 1, source: 'server' },
  line,
  value: Buffer.from(`${app}/${uuid}/${tx}/${line}`),
})

/** Which item it is: its upload and line. */
const name = (i: WriterItem) => `${i.app}/${i.uuid}/${i.upload.tx}/${i.line}`

/** What the screened write decides for each item: the decision kind, and the first transaction of a duplicate. */
function screenedOutcome(items: WriterItem[], filter: KeyFilter, stored: Map<string, { tx: string }>) {
  const { marks, lookups } = screenBatch(items, filter)
  // The index is asked about the look-ups only: give it only what it would find for them.
  const asked = new Set(lookups.map((i) => eventKey(i.app, i.uuid)))
  const found = new Map([...stored].filter(([key]) => asked.has(key)))
  const decisions = decideScreened(items, marks, found)
  let next = 0
  return items.map((it, i) => {
    if (marks[i] === Screened.New) return { kind: 'store', item: name(it) }
    const d = decisions[next++]!
    return d.kind === 'duplicate'
      ? { kind: d.kind, item: name(d.item), first: d.firstTransaction }
      : { kind: d.kind, item: name(d.item) }
  })
}

function exactOutcome(items: WriterItem[], stored: Map<string, { tx: string }>) {
  return classifyBatch(items, stored).map((d) =>
    d.kind === 'duplicate'
      ? { kind: d.kind, item: name(d.item), first: d.firstTransaction }
      : { kind: d.kind, item: name(d.item) },
  )
}

describe('screening a batch with the filter of stored keys', () => {
  it('decides every item as the exact rule over the whole batch does, false positives included', () => {
    const key = fc.record({ app: fc.constantFrom('a1', 'a2'), uuid: fc.integer({ min: 0, max: 40 }) })
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { selector: (k) => `${k.app}/${k.uuid}`, maxLength: 20 }),
        fc.array(
          fc.record({ key, tx: fc.constantFrom('t1', 't2', 't3'), line: fc.integer({ min: 1, max: 3 }) }),
          {
            maxLength: 60,
          },
        ),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 16 }),
        (storedKeys, batch, salt, saturated) => {
          // A filter of one 512-bit block holding the stored keys plus a few others, and up to all
          // its bits set: from no false positive to every key one, which must change nothing.
          const filter = new KeyFilter(1)
          filter.fill(
            Array.from({ length: saturated }, (_, i): [number, number] => [i, 0xffffffff]),
            0,
          )
          const stored = new Map<string, { tx: string }>()
          for (const k of storedKeys) {
            filter.add(k.app, String(k.uuid))
            stored.set(eventKey(k.app, String(k.uuid)), { tx: 't0' })
          }
          for (let i = 0; i < 3; i++) filter.add('noise', String(salt + i))
          const items = batch.map((b) => item(b.key.app, String(b.key.uuid), b.tx, b.line))
          // Some items come hashed by the CPU pool, the others are hashed when screened.
          const hashed = keyHashes(
            items.map((i) => i.app),
            items.map((i) => i.uuid),
          )
          items.forEach((it, i) => {
            if ((salt >> (i % 31)) & 1) Object.assign(it, { keyHash: hashed, keyIndex: i })
          })
          expect(screenedOutcome(items, filter, stored)).toEqual(exactOutcome(items, stored))
        },
      ),
      { seed: Number(process.env.SLUICE_PROPERTY_SEED ?? 17), numRuns: 500 },
    )
  })

  it('finds the copies of a suspect among items the pool hashed, and only those', () => {
    // Every item hashed (the splitter's writes): New items are passed over by their hash, so a
    // New item sharing a suspect's key must still be found by it, and one whose hash is not a
    // suspect's must stay New.
    const filter = new KeyFilter()
    filter.add('app', 'old')
    const items = [
      item('app', 'n1', 'tx-2', 1), // new, copied later in the batch
      item('app', 'n2', 'tx-2', 2), // new
      item('app', 'old', 'tx-2', 3), // stored before: a suspect
      item('app', 'n1', 'tx-3', 1), // a copy of line 1: a suspect, not asked
      item('other', 'n2', 'tx-3', 2), // the same uuid in another app: a key of its own, new
    ]
    const hashed = keyHashes(
      items.map((i) => i.app),
      items.map((i) => i.uuid),
    )
    items.forEach((it, i) => Object.assign(it, { keyHash: hashed, keyIndex: i }))
    const { marks, lookups } = screenBatch(items, filter)
    expect([...marks]).toEqual([
      Screened.NewWithCopies,
      Screened.New,
      Screened.Suspect,
      Screened.Suspect,
      Screened.New,
    ])
    expect(lookups.map((i) => `${i.uuid}/${i.upload.tx}`)).toEqual(['old/tx-2'])
  })

  it('asks about no key the filter did not hold before the batch, and adds each new key once', () => {
    const filter = new KeyFilter()
    filter.add('app', 'old')
    const items = [
      item('app', 'old', 'tx-2', 1), // stored before: a suspect
      item('app', 'n1', 'tx-2', 2), // new, copied later in the batch
      item('app', 'n2', 'tx-2', 3), // new
      item('app', 'n1', 'tx-3', 1), // a copy of line 2: a suspect, but line 2 was new: not asked
      item('app', 'old', 'tx-3', 2), // a second copy of a stored key: asked
    ]
    const { marks, lookups } = screenBatch(items, filter)
    const suspects = items.filter((_, i) => marks[i] === Screened.Suspect)
    expect([...marks]).toEqual([
      Screened.Suspect,
      Screened.NewWithCopies,
      Screened.New,
      Screened.Suspect,
      Screened.Suspect,
    ])
    expect(suspects.map((i) => i.uuid)).toEqual(['old', 'n1', 'old'])
    expect(lookups.map((i) => `${i.uuid}/${i.upload.tx}`)).toEqual(['old/tx-2', 'old/tx-3'])
    expect(filter.size).toBe(3)
    expect(filter.mightContain('app', 'n2')).toBe(true)
    const decisions = decideScreened(items, marks, new Map([[eventKey('app', 'old'), { tx: 'tx-1' }]]))
    expect(
      decisions.map((d) => [d.kind, d.item.uuid, d.kind === 'duplicate' ? d.firstTransaction : '']),
    ).toEqual([
      ['duplicate', 'old', 'tx-1'],
      ['store', 'n1', ''],
      ['duplicate', 'n1', 'tx-2'],
      ['duplicate', 'old', 'tx-1'],
    ])
  })
})
