import {
  allocWithHeadroom,
  HEADROOM_BYTES,
  viewWithHeadroom,
} from '../../../pipelines/connectors/bus/headroom.ts'

export interface UploadBufferOptions {
  /** The largest body kept in reused memory (the upload size limit); larger ones are allocated. */
  maxBytes: number
  /** Memory kept between uploads, across sizes; what is given back past it is left to the GC. */
  maxIdleBytes: number
  /** Bodies are kept in memory of a multiple of this (also the smallest size kept). */
  stepBytes?: number
}

const DEFAULT_STEP = 16 * 1024

/**
 * Memory for upload bodies that is used again from one upload to the next. A body read into a
 * fresh buffer each time was ~73 KB of memory outside V8's heap per plain upload: V8 counts it and
 * runs a scavenge each time such memory grows by 64 MB (every ~55 ms at the edge's rate), so a
 * third of the edge's scavenges came from its body buffers, besides the allocation itself and the
 * copy into cold memory (measured at `5c89e33`; docs/performance.md, "Edge").
 *
 * Bodies of a size from `stepBytes` to `maxBytes` get memory rounded up to a multiple of
 * `stepBytes`, with the bus's headroom before them (headroom.ts); smaller or larger ones get a
 * buffer of their own, as before. A buffer taken belongs to the caller until it gives it back,
 * which it may do only once nothing reads it any more: for an upload, once the bus's produce has
 * settled (the local log's write thread reads the body in place until its commit; kafkajs copies
 * it into its request before the send settles). Not giving one back is safe: it is then collected
 * like any buffer.
 */
export class UploadBuffers {
  private readonly step: number
  private readonly maxBytes: number
  private readonly maxIdleBytes: number
  /** Idle memory by its size. */
  private readonly idle = new Map<number, Buffer[]>()
  private idleBytes = 0
  /** Memory lent out, by the ArrayBuffer every view of it shares: a view's way back to its memory. */
  private readonly lent = new WeakMap<ArrayBufferLike, Buffer>()

  constructor(options: UploadBufferOptions) {
    this.step = options.stepBytes ?? DEFAULT_STEP
    this.maxBytes = options.maxBytes
    this.maxIdleBytes = options.maxIdleBytes
  }

  /** A buffer of `size` bytes (not zeroed) with the bus's headroom before it. */
  take(size: number): Buffer {
    if (size < this.step || size > this.maxBytes) return allocWithHeadroom(size)
    const capacity = Math.ceil(size / this.step) * this.step
    let memory = this.idle.get(capacity)?.pop()
    if (memory) this.idleBytes -= memory.length
    // Memory of its own (not a slice of Node's shared pool): its ArrayBuffer names it in `lent`.
    else memory = Buffer.allocUnsafeSlow(HEADROOM_BYTES + capacity)
    this.lent.set(memory.buffer, memory)
    return viewWithHeadroom(memory, size)
  }

  /** Takes back a buffer take() gave out; anything else, or a buffer given back already, is ignored. */
  give(body: Buffer): void {
    const memory = this.lent.get(body.buffer)
    if (memory === undefined) return
    this.lent.delete(body.buffer)
    if (this.idleBytes + memory.length > this.maxIdleBytes) return
    const capacity = memory.length - HEADROOM_BYTES
    let sized = this.idle.get(capacity)
    if (!sized) this.idle.set(capacity, (sized = []))
    sized.push(memory)
    this.idleBytes += memory.length
  }

  /** Memory kept idle now, in bytes. */
  get idleMemoryBytes(): number {
    return this.idleBytes
  }
}
