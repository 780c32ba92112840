import type { IncomingMessage } from 'node:http'
import type { Context } from 'hono'
import { allocWithHeadroom } from '../../pipelines/connectors/bus/headroom.ts'
import { payloadTooLarge, SluiceError } from '../shared/errors.ts'

/**
 * The body of a request on the upload path, bounded like readBoundedBody. Served by Node
 * (@hono/node-server puts the IncomingMessage in the context's env), it is read from the socket's
 * Buffers directly: through the web Request, each body was first wrapped in a ReadableStream and a
 * Request object, ~0.4 ms of the event loop per upload (a third of the edge's time on plain
 * bodies). Anywhere else (app.request() in tests), through the Request.
 */
export async function readRequestBody(c: Context, limit: number, memory?: BodyMemory): Promise<Buffer> {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming
  if (!isUnreadIncoming(incoming)) return readBoundedBody(c.req.raw, limit)
  return readIncomingBody(incoming, limit, memory)
}

/** Where a body of known length is read into (UploadBuffers); absent: a buffer of its own. */
export interface BodyMemory {
  /** `size` bytes with the bus's headroom before them (headroom.ts). */
  take(size: number): Buffer
}

/**
 * A Node request's body, bounded like readBoundedBody (413 once it reaches `limit` bytes). With a
 * Content-Length (Node's parser holds the body to it) the chunks are copied straight into one
 * buffer taken up front (from `memory` when given), with headroom for the bus's record header
 * (headroom.ts); without one they are gathered and joined at the end. The listeners stay on the
 * request once it settles (it is garbage with them): removing four listeners per upload put its
 * emitter's listener table into slow mode, work the edge did thousands of times a second.
 */
export function readIncomingBody(
  incoming: IncomingMessage,
  limit: number,
  memory?: BodyMemory,
): Promise<Buffer> {
  const declared = Number(incoming.headers['content-length'] ?? NaN)
  if (Number.isFinite(declared) && declared >= limit) return Promise.reject(tooLarge(limit))
  const sized = Number.isSafeInteger(declared) && declared >= 0
  const body = sized ? (memory ? memory.take(declared) : allocWithHeadroom(declared)) : undefined
  return new Promise<Buffer>((resolve, reject) => {
    const read = new BodyRead(limit, body, resolve, reject)
    incoming.on('data', (chunk: Buffer) => {
      // Nothing more is read past the limit; the answer (413) closes the exchange.
      if (!read.add(chunk)) incoming.pause()
    })
    incoming.on('end', () => read.end())
    incoming.on('error', (err: Error) => read.fail(aborted(err)))
    incoming.on('close', () => {
      if (!incoming.complete) read.fail(aborted(new Error('the client closed the connection')))
    })
  })
}

/**
 * One body as it arrives. A class, not closures over local variables: run by tsx, a named
 * closure made per request was also given its name (an Object.defineProperty each).
 */
class BodyRead {
  private settled = false
  private total = 0
  /** Chunks of a body of unknown length, joined at the end. */
  private readonly chunks: Buffer[] | undefined

  constructor(
    private readonly limit: number,
    /** The whole body's memory, when its length is known. */
    private readonly body: Buffer | undefined,
    private readonly resolve: (body: Buffer) => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.chunks = body ? undefined : []
  }

  /** Takes a chunk; false once the body is too large (the read is then refused). */
  add(chunk: Buffer): boolean {
    if (this.settled) return true
    const { body, total } = this
    if (total + chunk.length >= this.limit || (body && total + chunk.length > body.length)) {
      this.fail(tooLarge(this.limit))
      return false
    }
    if (body) body.set(chunk, total)
    else this.chunks!.push(chunk)
    this.total = total + chunk.length
    return true
  }

  end(): void {
    if (this.settled) return
    this.settled = true
    const { body, total } = this
    // Node ends a sized body only once all of it came: `total` is its length.
    this.resolve(
      body ? (total === body.length ? body : body.subarray(0, total)) : joinWithHeadroom(this.chunks!, total),
    )
  }

  fail(error: Error): void {
    if (this.settled) return
    this.settled = true
    this.reject(error)
  }
}

/**
 * The chunks in one buffer with room in front for the bus's record header (headroom.ts): the
 * copy Buffer.concat made anyway, and the local log then stores the body without copying it again.
 */
function joinWithHeadroom(chunks: Buffer[], total: number): Buffer {
  const body = allocWithHeadroom(total)
  let at = 0
  for (const chunk of chunks) {
    body.set(chunk, at)
    at += chunk.length
  }
  return body
}

function isUnreadIncoming(value: unknown): value is IncomingMessage {
  const incoming = value as Partial<IncomingMessage> | undefined
  return (
    typeof incoming?.on === 'function' &&
    typeof incoming.headers === 'object' &&
    incoming.readableEnded === false &&
    incoming.readableFlowing !== true
  )
}

/**
 * Read a request body, refusing it (413) as soon as it reaches `limit` bytes, so an oversized
 * upload never sits in memory whole.
 */
export async function readBoundedBody(request: Request, limit: number): Promise<Buffer> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared >= limit) throw tooLarge(limit)
  if (!request.body) return Buffer.alloc(0)
  const reader = (request.body as ReadableStream<Uint8Array>).getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>
    try {
      chunk = await reader.read()
    } catch (err) {
      throw aborted(err)
    }
    const { done, value } = chunk
    if (done) break
    total += value.byteLength
    if (total >= limit) {
      await reader.cancel().catch(() => undefined)
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, total)
}

/**
 * The client went away before its body arrived: nothing was promised and nobody is listening for
 * the answer, so this is routine, not a fault (the error handler logs it as one line at debug).
 */
export const REQUEST_ABORTED = 'request_aborted'
const aborted = (cause: unknown) =>
  new SluiceError(REQUEST_ABORTED, 400, 'the request body was not received completely', { cause })

const tooLarge = (limit: number) =>
  payloadTooLarge(`body must be smaller than ${Math.round(limit / 1024)} KB`)
