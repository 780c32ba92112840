import { payloadTooLarge } from '../shared/errors.ts'

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
    const { done, value } = await reader.read()
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

const tooLarge = (limit: number) =>
  payloadTooLarge(`body must be smaller than ${Math.round(limit / 1024)} KB`)
