import { createHash, type Hash } from 'node:crypto'
import { isUtf8 } from 'node:buffer'
import { Transform, Writable, type TransformCallback } from 'node:stream'
import { createGunzip, type Gunzip } from 'node:zlib'
import { IMPORT_LIMITS, type ImportCompression } from '../../schemas/imports.ts'

/** Why the edge refuses an import body before its 202 (the edge answers `status`). */
export class BodyRefused extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message)
    this.name = 'BodyRefused'
  }
}

export interface BodyFacts {
  bytes: number
  /** SHA-256 of the body as sent (hex): the import id of a body sent without an Idempotency-Key. */
  sha256: string
  compression: ImportCompression
  inflatedBytes: number
  /** The first line of the (inflated) body without its line break, or '' when it has none. */
  firstLine: string
}

export interface BodyLimits {
  maxBytes: number
  maxInflatedBytes: number
}

/**
 * The edge's check of an import body as it streams past on its way to the files port: its size
 * (413 at the limit), its hash, and, inflating a gzip body as it arrives (gzip by the magic bytes,
 * or declared), that the gzip is whole and valid (400 otherwise: a truncated file is refused
 * before anything of it is applied) and inflates to under the limit, and its first line (the CSV
 * header, checked by the caller). Nothing is kept but the first line.
 */
export class BodyCheck extends Transform {
  private bytes = 0
  private inflatedBytes = 0
  private readonly hash: Hash = createHash('sha256')
  private gunzip: Gunzip | undefined
  private decided = false
  private compression: ImportCompression = 'none'
  private head: Buffer[] = []
  private headBytes = 0
  private firstLine: string | undefined
  private inflateError: Error | undefined
  private inflateDone: Promise<void> = Promise.resolve()

  constructor(
    private readonly limits: BodyLimits,
    private readonly declaredGzip: boolean,
  ) {
    super()
  }

  facts(): BodyFacts {
    return {
      bytes: this.bytes,
      sha256: this.hash.digest('hex'),
      compression: this.compression,
      inflatedBytes: this.inflatedBytes,
      firstLine: this.firstLine ?? Buffer.concat(this.head).toString('utf8'),
    }
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.bytes >= this.limits.maxBytes)
      return done(new BodyRefused(413, `import body must be under ${this.limits.maxBytes} bytes`))
    this.hash.update(chunk)
    if (!this.decided) this.decide(chunk)
    if (this.inflateError) return done(this.inflateError)
    if (!this.gunzip) {
      this.sawInflated(chunk)
      return done(null, chunk)
    }
    if (this.gunzip.write(chunk)) return done(null, chunk)
    this.gunzip.once('drain', () => done(this.inflateError ?? null, chunk))
  }

  override _flush(done: TransformCallback): void {
    if (this.bytes === 0) return done(new BodyRefused(400, 'import body is empty'))
    if (!this.gunzip) return done(this.inflateError ?? null)
    this.gunzip.end()
    this.inflateDone.then(
      () => done(this.inflateError ?? null),
      (err: unknown) => done(err as Error),
    )
  }

  private decide(first: Buffer): void {
    this.decided = true
    const magic = first.length >= 2 && first[0] === 0x1f && first[1] === 0x8b
    if (!magic && !this.declaredGzip) return
    this.compression = 'gzip'
    const gunzip = createGunzip()
    this.gunzip = gunzip
    const sink = new Writable({
      write: (piece: Buffer, _enc, next) => {
        this.sawInflated(piece)
        next(this.inflateError)
      },
    })
    this.inflateDone = new Promise<void>((resolve) => {
      const fail = (err: Error) => {
        this.inflateError ??=
          err instanceof BodyRefused ? err : new BodyRefused(400, `invalid gzip body: ${err.message}`)
        resolve()
      }
      gunzip.on('error', fail)
      sink.on('error', fail)
      sink.on('finish', () => resolve())
    })
    gunzip.pipe(sink)
  }

  private sawInflated(piece: Buffer): void {
    this.inflatedBytes += piece.length
    if (this.inflatedBytes >= this.limits.maxInflatedBytes) {
      this.inflateError ??= new BodyRefused(
        413,
        `import body must inflate to under ${this.limits.maxInflatedBytes} bytes`,
      )
      return
    }
    if (this.firstLine !== undefined) return
    const nl = piece.indexOf(0x0a)
    const take = nl >= 0 ? piece.subarray(0, nl) : piece
    if (this.headBytes + take.length > IMPORT_LIMITS.headerMaxBytes) {
      this.inflateError ??= new BodyRefused(
        400,
        `the first line of an import must be under ${IMPORT_LIMITS.headerMaxBytes} bytes`,
      )
      return
    }
    this.head.push(take)
    this.headBytes += take.length
    if (nl < 0) return
    const line = Buffer.concat(this.head)
    this.head = []
    if (!isUtf8(line)) {
      this.inflateError ??= new BodyRefused(400, 'the first line of the import is not UTF-8')
      return
    }
    this.firstLine = line
      .toString('utf8')
      .replace(/^\uFEFF/, '')
      .replace(/\r$/, '')
  }
}
