import { classifyBatch, type WriterDecision } from './classify-stored.ts'
import type { KeyFilter } from './key-filter.ts'
import type { WriterItem } from './writer-item.ts'

// 30 bits of a hash: a small integer to V8 (a set of them stores no boxed numbers).
const SMALL_INTEGER = 0x3fffffff

/** What screenBatch knows of each item of a batch (its mark). */
export const Screened = {
  /** Not in the filter, nor the key of an earlier item of the batch: stored, no question asked. */
  New: 0,
  /** Not in the filter, but a later item has its key: the exact rule decides (it is stored). */
  NewWithCopies: 1,
  /** The filter may hold its key (stored before, an earlier item's, or a false positive). */
  Suspect: 2,
} as const

export interface ScreenedBatch {
  /** One mark per item, in the batch's order. */
  marks: Uint8Array
  /**
   * The Suspects the dedupe index is asked about: all but the later copies of a key whose first
   * item in the batch was New (that key was never stored: its copies are this batch's duplicates).
   */
  lookups: WriterItem[]
}

/**
 * Screens a batch with the filter of stored keys, hashing each key once: a key the filter does
 * not hold was never stored and is added to it at once, so a later copy in the same batch finds it
 * and becomes a Suspect too (a Bloom filter has no false negatives). Only Suspects, and the earlier
 * items sharing their keys, need the exact rule (`classifyBatch`), and only Suspects whose key
 * the batch did not bring first need a look-up; the ~97 % of items left are stored as they are,
 * without a key string, a map entry or a decision each.
 *
 * The filter gets every New key before the insert: if the insert fails, those keys are false
 * positives until a retry stores them (as with any key added before an insert).
 */
export function screenBatch(items: readonly WriterItem[], filter: KeyFilter): ScreenedBatch {
  const marks = new Uint8Array(items.length)
  const suspects: WriterItem[] = []
  // app -> uuids of the suspects; only built when there are suspects.
  const suspectKeys = new Map<string, Set<string>>()
  // The suspects' first key hashes, when the pool hashed every one of them: a New item whose hash
  // is not among them shares no suspect's key, and is passed over without hashing its uuid string
  // (~97 % of a write's items are New; hashing theirs here cost ~0.15 µs each).
  const suspectHashes = new Set<number>()
  let unhashedSuspect = false
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!
    const at = 2 * (item.keyIndex ?? 0)
    if (
      item.keyHash
        ? filter.addIfAbsentHashed(item.keyHash[at]!, item.keyHash[at + 1]!)
        : filter.addIfAbsent(item.app, item.uuid)
    )
      continue
    marks[i] = Screened.Suspect
    suspects.push(items[i]!)
    if (item.keyHash) suspectHashes.add(item.keyHash[at]! & SMALL_INTEGER)
    else unhashedSuspect = true
    let uuids = suspectKeys.get(item.app)
    if (!uuids) suspectKeys.set(item.app, (uuids = new Set()))
    uuids.add(item.uuid)
  }
  if (suspects.length === 0) return { marks, lookups: suspects }
  // Keys first seen New in this batch: the filter did not hold them, so no earlier write had them.
  let newWithCopies: Map<string, Set<string>> | undefined
  for (let i = 0; i < items.length; i++) {
    if (marks[i] !== Screened.New) continue
    const item = items[i]!
    if (
      item.keyHash &&
      !unhashedSuspect &&
      !suspectHashes.has(item.keyHash[2 * (item.keyIndex ?? 0)]! & SMALL_INTEGER)
    )
      continue
    if (!suspectKeys.get(item.app)?.has(item.uuid)) continue
    marks[i] = Screened.NewWithCopies
    newWithCopies ??= new Map()
    let uuids = newWithCopies.get(item.app)
    if (!uuids) newWithCopies.set(item.app, (uuids = new Set()))
    uuids.add(item.uuid)
  }
  const lookups = newWithCopies
    ? suspects.filter((item) => !newWithCopies.get(item.app)?.has(item.uuid))
    : suspects
  return { marks, lookups }
}

/**
 * The decision of every item that needs the exact rule (marks other than New), in order, over the
 * keys the index found stored; items marked New are stored without one. Gives the same decisions
 * as `classifyBatch` over the whole batch: an item's decision depends only on the earlier items
 * with its key and on the index, and every item sharing a key with a Suspect is in the subset.
 */
export function decideScreened(
  items: readonly WriterItem[],
  marks: Uint8Array,
  alreadyStored: ReadonlyMap<string, { tx: string; line?: number }>,
): WriterDecision[] {
  const subset: WriterItem[] = []
  for (let i = 0; i < items.length; i++) if (marks[i] !== Screened.New) subset.push(items[i]!)
  return classifyBatch(subset, alreadyStored)
}
