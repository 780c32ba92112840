/**
 * Buffers with room reserved in front of them. A body read into one can be stored by a bus that
 * lays a small header before the payload (the local log's records, record-codec.ts) by writing
 * the header into that room, instead of copying the payload into a new buffer: one copy of each
 * upload body fewer on the main thread, and one large allocation fewer for the garbage collector
 * to account for. Any bus may ignore it; the Buffer is an ordinary Buffer of the payload.
 */
const HEADROOM = 1024

// Views handed out and the room still free before each; taken once (takeHeadroom), so two writes
// of one body never share the room.
const reserved = new WeakMap<Buffer, number>()

/** A Buffer of `size` bytes (not zeroed) with HEADROOM bytes of its own memory in front of it. */
export function allocWithHeadroom(size: number): Buffer {
  return viewWithHeadroom(Buffer.allocUnsafe(HEADROOM + size), size)
}

/**
 * The `size` bytes of `memory` after its first HEADROOM bytes, with those as the view's room:
 * for memory a caller keeps and uses again (the edge's upload buffers). Throws if it is too small.
 */
export function viewWithHeadroom(memory: Buffer, size: number): Buffer {
  if (memory.length < HEADROOM + size)
    throw new RangeError(`${memory.length} bytes hold no ${size}-byte view after the headroom`)
  const view = memory.subarray(HEADROOM, HEADROOM + size)
  reserved.set(view, HEADROOM)
  return view
}

/** Bytes of room allocWithHeadroom and viewWithHeadroom leave before a view. */
export const HEADROOM_BYTES = HEADROOM

/**
 * A view of `bytes` bytes immediately before `payload` followed by the payload, if `payload` was
 * made by allocWithHeadroom with that much room still free; the room is then used up. Undefined
 * otherwise (copy instead).
 */
export function takeHeadroom(payload: Buffer, bytes: number): Buffer | undefined {
  const room = reserved.get(payload)
  if (room === undefined || room < bytes) return undefined
  reserved.delete(payload)
  return Buffer.from(payload.buffer, payload.byteOffset - bytes, bytes + payload.length)
}
