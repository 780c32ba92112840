import { checkGzip, hasContent, type GunzipCheck } from './gzip.ts'

/** Whether a gzip body is complete, valid, and inflates to under `maxBytes`, with or without content. */
export type GzipCheck = (body: Buffer, maxBytes: number) => Promise<GunzipCheck>

/**
 * The edge's gzip check: zlib's inflate called through koffi (the zlib inside the Node binary,
 * the one node:zlib uses) on libuv's pool, into output memory each check reuses.
 *
 * Why not node:zlib (checkGzip): its stream allocates a fresh 256 KB Buffer for every chunk of
 * output, ~2.3 MB per bench body, dropped at once. On the edge's main thread that external memory
 * paced V8's collections of the whole heap: a major collection every ~50 gzip uploads, and V8's
 * threads spent as much CPU as the inflation (issue 17; measured at `2ae33ee`). On a thread of its
 * own the garbage stays, tens of MB of it, until that isolate's external memory passes V8's limit
 * (measured at `c19175a`). Inflating into fixed memory leaves no garbage at all: paired with
 * node:zlib's check, edge only, 23 % less CPU per gzip upload and 29 % more uploads a second, no
 * major collection. The memory: up to `concurrency` contexts of ~2.6 MB while checks run, freed
 * after 5 s without one.
 *
 * Falls back to checkGzip where koffi cannot load (the answers are the same; a test holds both
 * to it), and says so through `onFallback`.
 */
export function createGzipCheck(options: { onFallback?: (err: unknown) => void } = {}): GzipCheck {
  const native: Promise<GzipCheck> = openNativeGzipChecker().then(
    (checker) => (body, maxBytes) => checker.check(body, maxBytes),
    (err: unknown) => {
      options.onFallback?.(err)
      return checkGzip
    },
  )
  return async (body, maxBytes) => (await native)(body, maxBytes)
}

/**
 * The check through zlib's own inflate; rejects where koffi or the Node binary's zlib cannot load.
 * `concurrency`: checks inflating at once, by default as many as libuv's pool has threads (4 did
 * better than 2 on two cores: the inflation waits on nothing); more wait their turn.
 * `idleReleaseMs`: how long contexts are kept once no check runs.
 */
export async function openNativeGzipChecker(
  options: { concurrency?: number; idleReleaseMs?: number } = {},
): Promise<NativeGzipChecker> {
  return new NativeGzipChecker(
    await loadZlib(),
    options.concurrency ?? (Number(process.env.UV_THREADPOOL_SIZE) || 4),
    options.idleReleaseMs ?? IDLE_RELEASE_MS,
  )
}

const Z_OK = 0
const Z_STREAM_END = 1
const Z_BUF_ERROR = -5
const Z_NO_FLUSH = 0
/** 15 bits of window, +16: gzip only (a zlib or raw stream is refused), as node:zlib's Gunzip. */
const GZIP_WINDOW_BITS = 31
/** Compressed bytes handed to zlib per refill; larger bodies are fed in turns. */
const INPUT_WINDOW = 512 * 1024
/**
 * Inflated bytes per call. Each call through koffi costs the event loop more than a node:zlib chunk
 * does, so a call inflates a whole typical body (~2.3 MB in the bench takes two): with 256 KB
 * windows the check saved 15 % of the edge's CPU per gzip upload, with 2 MB 23 % (paired runs,
 * measured at `2ae33ee`).
 */
const OUTPUT_WINDOW = 2 * 1024 * 1024
/** Contexts kept while no check runs; after that their ~2.6 MB each go back to malloc. */
const IDLE_RELEASE_MS = 5_000

type Pointer = unknown
/** A C function bound by koffi: called directly, or `.async` on libuv's pool. */
interface NativeFn {
  (...args: unknown[]): number
  async(...args: unknown[]): void
}
interface Zlib {
  koffi: typeof import('koffi').default
  init: NativeFn
  inflate: NativeFn
  reset: NativeFn
  end: NativeFn
  version: string
  streamSize: number
  offsets: { nextIn: number; availIn: number; nextOut: number; availOut: number }
}

/** Loaded once per process: koffi's type names are process-wide. */
let zlibLoaded: Promise<Zlib> | undefined
function loadZlib(): Promise<Zlib> {
  zlibLoaded ??= bindZlib()
  return zlibLoaded
}

async function bindZlib(): Promise<Zlib> {
  const { default: koffi } = await import('koffi')
  // The running program's own symbols: Node exports its zlib for native addons.
  const lib = koffi.load(null)
  const stream = koffi.struct('sluice_z_stream', {
    next_in: 'void *',
    avail_in: 'uint32_t',
    total_in: 'unsigned long',
    next_out: 'void *',
    avail_out: 'uint32_t',
    total_out: 'unsigned long',
    msg: 'void *',
    state: 'void *',
    zalloc: 'void *',
    zfree: 'void *',
    opaque: 'void *',
    data_type: 'int',
    adler: 'unsigned long',
    reserved: 'unsigned long',
  })
  const fn = (signature: string) => lib.func(signature) as unknown as NativeFn
  const version = (lib.func('const char *zlibVersion()') as unknown as () => string)()
  return {
    koffi,
    init: fn('int inflateInit2_(void *strm, int windowBits, const char *version, int streamSize)'),
    inflate: fn('int inflate(void *strm, int flush)'),
    reset: fn('int inflateReset(void *strm)'),
    end: fn('int inflateEnd(void *strm)'),
    version,
    streamSize: koffi.sizeof(stream),
    offsets: {
      nextIn: koffi.offsetof(stream, 'next_in'),
      availIn: koffi.offsetof(stream, 'avail_in'),
      nextOut: koffi.offsetof(stream, 'next_out'),
      availOut: koffi.offsetof(stream, 'avail_out'),
    },
  }
}

/** One inflate stream and its windows, in native memory that does not move; reused check after check. */
interface Context {
  stream: Pointer
  fields: DataView
  input: Pointer
  inputBytes: Uint8Array
  output: Pointer
  outputBytes: Uint8Array
}

export class NativeGzipChecker {
  private readonly idle: Context[] = []
  private contexts = 0
  private readonly waiting: { resolve(context: Context): void; reject(err: unknown): void }[] = []
  private lastRelease = 0
  private idleRelease: NodeJS.Timeout | undefined

  constructor(
    private readonly zlib: Zlib,
    private readonly concurrency: number,
    private readonly idleReleaseMs: number,
  ) {}

  async check(body: Buffer, maxBytes: number): Promise<GunzipCheck> {
    const context = await this.acquire()
    let reusable = false
    try {
      const result = await this.inflate(context, body, maxBytes)
      reusable = this.zlib.reset(context.stream) === Z_OK
      return result
    } finally {
      this.release(context, reusable)
    }
  }

  private async inflate(context: Context, body: Buffer, maxBytes: number): Promise<GunzipCheck> {
    const { fields, inputBytes, outputBytes } = context
    const { offsets } = this.zlib
    let fed = 0
    let window = 0
    const feed = () => {
      window = Math.min(INPUT_WINDOW, body.length - fed)
      inputBytes.set(body.subarray(fed, fed + window))
      fed += window
      this.zlib.koffi.encode(context.stream, offsets.nextIn, 'void *', context.input)
      fields.setUint32(offsets.availIn, window, true)
    }
    feed()
    let inflated = 0
    let content = false
    for (;;) {
      this.zlib.koffi.encode(context.stream, offsets.nextOut, 'void *', context.output)
      fields.setUint32(offsets.availOut, OUTPUT_WINDOW, true)
      const status = await this.call(this.zlib.inflate, context.stream, Z_NO_FLUSH)
      const availIn = fields.getUint32(offsets.availIn, true)
      const availOut = fields.getUint32(offsets.availOut, true)
      const produced = OUTPUT_WINDOW - availOut
      inflated += produced
      if (!content) content = hasContent(outputBytes.subarray(0, produced))
      if (inflated >= maxBytes) return { kind: 'too_large' }
      if (status === Z_STREAM_END) {
        // What follows a member, as node:zlib reads it: nothing, or zero padding, ends the body;
        // anything else must be another gzip member.
        const next = availIn > 0 ? inputBytes[window - availIn] : body[fed]
        if (next === undefined || next === 0)
          return { kind: 'ok', inflatedBytes: inflated, hasContent: content }
        if (this.zlib.reset(context.stream) !== Z_OK) return { kind: 'invalid' }
        if (availIn === 0) feed()
        continue
      }
      if (status !== Z_OK && status !== Z_BUF_ERROR) return { kind: 'invalid' }
      if (availIn > 0) {
        // zlib stops with input left only when the output window is full.
        if (availOut > 0) return { kind: 'invalid' }
      } else if (fed < body.length) {
        feed()
      } else if (availOut > 0) {
        // Every byte read, output room left, and the stream has not ended: the body is cut short.
        return { kind: 'invalid' }
      }
    }
  }

  private call(fn: NativeFn, ...args: unknown[]): Promise<number> {
    return new Promise((resolve, reject) => {
      fn.async(...args, (err: unknown, status: number) =>
        err
          ? reject(err instanceof Error ? err : new Error('koffi: the call failed', { cause: err }))
          : resolve(status),
      )
    })
  }

  private acquire(): Promise<Context> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject })
      this.dispatch()
    })
  }

  private release(context: Context, reusable: boolean): void {
    if (reusable) this.idle.push(context)
    else this.close(context)
    this.dispatch()
    this.lastRelease = Date.now()
    this.idleRelease ??= setTimeout(() => this.releaseIdle(), this.idleReleaseMs).unref()
  }

  /** Frees the idle contexts once no check has ended for idleReleaseMs. */
  private releaseIdle(): void {
    const quiet = Date.now() - this.lastRelease
    if (quiet < this.idleReleaseMs) {
      this.idleRelease = setTimeout(() => this.releaseIdle(), this.idleReleaseMs - quiet).unref()
      return
    }
    this.idleRelease = undefined
    for (const context of this.idle.splice(0)) this.close(context)
  }

  /** Contexts open, idle or in use. */
  get openContexts(): number {
    return this.contexts
  }

  /** Hands contexts to the checks waiting, in order, opening new ones up to the concurrency. */
  private dispatch(): void {
    while (this.waiting.length > 0) {
      let context = this.idle.pop()
      if (!context) {
        if (this.contexts >= this.concurrency) return
        try {
          context = this.open()
        } catch (err) {
          this.waiting.shift()!.reject(err)
          continue
        }
      }
      this.waiting.shift()!.resolve(context)
    }
  }

  private open(): Context {
    const { koffi, streamSize } = this.zlib
    const stream: Pointer = koffi.alloc('uint8_t', streamSize)
    const fields = new DataView(koffi.view(stream, streamSize))
    new Uint8Array(fields.buffer).fill(0)
    const input: Pointer = koffi.alloc('uint8_t', INPUT_WINDOW)
    const output: Pointer = koffi.alloc('uint8_t', OUTPUT_WINDOW)
    const status = this.zlib.init(stream, GZIP_WINDOW_BITS, this.zlib.version, streamSize)
    if (status !== Z_OK) {
      for (const memory of [stream, input, output]) koffi.free(memory)
      throw new Error(`zlib inflateInit2_ failed (${status})`)
    }
    this.contexts++
    return {
      stream,
      fields,
      input,
      inputBytes: new Uint8Array(koffi.view(input, INPUT_WINDOW)),
      output,
      outputBytes: new Uint8Array(koffi.view(output, OUTPUT_WINDOW)),
    }
  }

  private close(context: Context): void {
    this.zlib.end(context.stream)
    for (const memory of [context.stream, context.input, context.output]) this.zlib.koffi.free(memory)
    this.contexts--
  }
}
