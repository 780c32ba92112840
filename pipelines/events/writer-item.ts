// What the block codec (event-block.ts) and the exactly-once rule (classify-stored.ts) both read:
// an event for the event store, where it came from, and the parts of its row.

/** A row given as bytes to copy into a block: `head`, then `source[start, end)`, then `tail`. */
export interface RowParts {
  head: Buffer
  source: Buffer
  start: number
  end: number
  tail: Buffer
}

export interface UploadRef {
  tx: string
  recv: number
  org: number
  source: 'server' | 'sdk'
}

/**
 * One event for the event store: its key, where it came from and its row. One object per event,
 * the upload's part shared by the upload's events: a batch's items live until its insert ends
 * (a second or so), long enough for V8 to move them to the old generation, so every object per
 * event is garbage the main thread's full collections mark and sweep.
 */
export interface WriterItem {
  app: string
  uuid: string
  /** The upload the event came in (transaction, receipt time, org, source). */
  upload: UploadRef
  /** Its line in that upload. */
  line: number
  /** The event's RowBinary row, whole or in parts (head, a slice of the pool's buffer, tail). */
  value: Buffer | RowParts
  /**
   * Where the CPU pool hashed the key for the filter of stored keys: h1 at `keyHash[2 * keyIndex]`,
   * h2 after it (PackedEvents.keyHash). Without it the key is hashed when screened.
   */
  keyHash?: Uint32Array
  keyIndex?: number
}
