import { payloadTooLarge, SluiceError } from '../shared/errors.ts'

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
