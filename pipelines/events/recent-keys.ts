import { keyBytes, keyLength, murmurHash3x86 } from './key-filter.ts'

/**
 * The keys this process stored last, each with the transaction that stored it: a copy of a recent
 * event (a sender's retry, the same events sent again moments later) is decided without asking the
 * dedupe index, whose look-up costs ~15 us of engine time per key per part of the index.
 *
 * Exact (a hit compares the app and uuid strings, never a hash alone) and bounded: a ring of the
 * last `capacity` keys, found through a table of twice as many slots probed at most PROBES deep
 * from the key's hash (the filter's h1, which the CPU pool computed for server events). A slot
 * whose key the ring has dropped is free again; a key whose PROBES slots all hold newer keys takes
 * the oldest one's place. Forgetting a key early only sends its copies to the index, as before.
 *
 * The keys of a write go in once it is decided, before its insert ends, so that the write after it,
 * looked up meanwhile, finds its copies of them here: the index cannot have them yet. If that
 * insert fails, the event store forgets every key (`forget`) and asks the index again for every
 * write looked up before the failure; otherwise "found here" means what the index would answer:
 * stored, by this transaction (each key is stored once, and nothing deletes a stored key within
 * the ring's horizon; the index keeps keys for 8 days).
 */
const PROBES = 8

export class RecentKeys {
  private readonly apps: string[]
  private readonly uuids: string[]
  private readonly transactions: string[]
  /** Slot -> the sequence number (from 1) of the key it points to; 0: never used. */
  private readonly slots: Float64Array
  /** Slot -> its key's hash, compared before the strings. */
  private readonly tags: Uint32Array
  /** The sequence number of the next key added: the ring holds those from next - capacity on. */
  private next = 1
  private scratch: Buffer = Buffer.allocUnsafe(256)

  constructor(readonly capacity: number) {
    this.apps = new Array<string>(capacity).fill('')
    this.uuids = new Array<string>(capacity).fill('')
    this.transactions = new Array<string>(capacity).fill('')
    this.slots = new Float64Array(capacity * 2)
    this.tags = new Uint32Array(capacity * 2)
  }

  /** Remembers that `transaction` stored the key `app`, `uuid` (`hash`: its h1, if known). */
  add(app: string, uuid: string, transaction: string, hash = this.hash(app, uuid)): void {
    const size = this.slots.length
    const home = hash % size
    let slot = home
    let oldest = Infinity
    for (let i = 0; i < PROBES; i++) {
      const s = (home + i) % size
      const seq = this.slots[s]!
      if (!this.live(seq)) {
        slot = s
        break
      }
      if (seq < oldest) {
        oldest = seq
        slot = s
      }
    }
    const seq = this.next++
    const at = seq % this.capacity
    this.apps[at] = app
    this.uuids[at] = uuid
    this.transactions[at] = transaction
    this.slots[slot] = seq
    this.tags[slot] = hash
  }

  /** The transaction that stored the key `app`, `uuid`, if this process stored it recently. */
  get(app: string, uuid: string, hash = this.hash(app, uuid)): string | undefined {
    const size = this.slots.length
    const home = hash % size
    for (let i = 0; i < PROBES; i++) {
      const s = (home + i) % size
      const seq = this.slots[s]!
      if (seq === 0) return undefined
      if (this.tags[s] !== hash || !this.live(seq)) continue
      const at = seq % this.capacity
      if (this.uuids[at] === uuid && this.apps[at] === app) return this.transactions[at]
    }
    return undefined
  }

  /** Forgets every key (an insert failed: the keys added for it may not be stored). */
  forget(): void {
    this.next += this.capacity
  }

  /** Whether the ring still holds key `seq` (0, never used, is not). */
  private live(seq: number): boolean {
    return seq > 0 && seq >= this.next - this.capacity
  }

  /** The key's h1 (KeyFilter's): murmurHash3_32 of app, a newline, uuid. */
  private hash(app: string, uuid: string): number {
    this.scratch = keyBytes(this.scratch, app, uuid)
    return murmurHash3x86(this.scratch, keyLength)
  }
}
