import { Transform, type TransformCallback } from 'node:stream'
import { constants, crc32, deflateRaw } from 'node:zlib'

/** A gzip header: deflate, no name or comment, mtime 0 (files compare by content), OS unknown. */
const HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff])
/** A final, empty deflate block (fixed Huffman, end of block): what closes a deflate stream. */
const LAST_BLOCK = Buffer.from([0x03, 0x00])
/** Deflate looks back at most this far: the dictionary each block gets from the one before. */
const WINDOW_BYTES = 32 * 1024

export interface ParallelGzipOptions {
  level: number
  /** Bytes of input compressed as one piece (default 1 MiB). */
  blockBytes?: number
  /** Pieces compressed at once on the libuv pool (default 2: the cores of the target machine). */
  parallel?: number
}

/**
 * gzip whose deflate runs on several libuv threads at once, as pigz does: the input is cut into
 * blocks, each block is deflated on its own with the 32 KB before it as its dictionary and ended
 * with a sync flush (no final bit), and the pieces are written in order between one gzip header
 * and one trailer (CRC-32 of the whole input and its size). The result is one ordinary gzip
 * member, which every gunzip reads (Ruby's GzipReader included, which stops after a first
 * member); it is a few tenths of a percent larger than a single-stream deflate at the same level.
 * An export file's deflate took more CPU than the engine's query that fed it, so one stream left
 * a core idle (measured at `cb58ee9`; docs/performance.md, "Exports").
 */
export class ParallelGzip extends Transform {
  private readonly level: number
  private readonly blockBytes: number
  private readonly parallel: number
  private pending: Buffer[] = []
  private pendingBytes = 0
  private inFlight: Promise<Buffer>[] = []
  private previousTail: Buffer | undefined
  private crc = 0
  private size = 0
  private started = false

  constructor(options: ParallelGzipOptions) {
    super()
    this.level = options.level
    this.blockBytes = options.blockBytes ?? 1024 * 1024
    this.parallel = Math.max(1, options.parallel ?? 2)
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.pending.push(chunk)
    this.pendingBytes += chunk.length
    if (this.pendingBytes < this.blockBytes) return done()
    this.dispatch().then(() => done(), done)
  }

  override _flush(done: TransformCallback): void {
    const finish = async () => {
      if (this.pendingBytes > 0 || !this.started) await this.dispatch()
      while (this.inFlight.length > 0) this.push(await this.inFlight.shift()!)
      const trailer = Buffer.alloc(8)
      trailer.writeUInt32LE(this.crc >>> 0, 0)
      trailer.writeUInt32LE(this.size % 2 ** 32, 4)
      this.push(Buffer.concat([LAST_BLOCK, trailer]))
    }
    finish().then(() => done(), done)
  }

  /** Sends the pending input off to be deflated; waits while `parallel` pieces are under way. */
  private async dispatch(): Promise<void> {
    const block =
      this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes)
    this.pending = []
    this.pendingBytes = 0
    if (!this.started) {
      this.started = true
      this.push(HEADER)
    }
    this.crc = crc32(block, this.crc)
    this.size += block.length
    const dictionary = this.previousTail
    this.previousTail =
      block.length >= WINDOW_BYTES
        ? block.subarray(block.length - WINDOW_BYTES)
        : Buffer.concat([dictionary ?? Buffer.alloc(0), block]).subarray(-WINDOW_BYTES)
    const piece = new Promise<Buffer>((resolve, reject) =>
      deflateRaw(
        block,
        {
          level: this.level,
          finishFlush: constants.Z_SYNC_FLUSH,
          ...(dictionary && dictionary.length > 0 && { dictionary }),
        },
        (err, out) => (err ? reject(err) : resolve(out)),
      ),
    )
    // Awaited in order below; a later piece failing first must not count as unhandled meanwhile.
    piece.catch(() => {})
    this.inFlight.push(piece)
    while (this.inFlight.length >= this.parallel) this.push(await this.inFlight.shift()!)
  }
}
