import type { Context } from 'hono'
import { hasContent } from '../../pipelines/events/gzip.ts'
import type { GzipCheck } from '../../pipelines/events/gzip-check.ts'
import { badRequest, payloadTooLarge, unavailable, unsupportedMediaType } from '../shared/errors.ts'
import { readRequestBody, type BodyMemory } from './read-body.ts'

export interface UploadLimits {
  maxBytes: number
  maxInflatedBytes: number
}

/** What the upload checks read of a request: headers, and the body once. */
export interface UploadRequest {
  /** A header by its name in lower case. */
  header(lowerCaseName: string): string | undefined
  /** The whole body, read into `memory` when it can be; 413 once it reaches `limit` bytes. */
  readBody(limit: number, memory?: BodyMemory): Promise<Buffer>
}

/** The upload checks' view of a request Hono dispatched. */
export function honoUploadRequest(c: Context): UploadRequest {
  return new HonoUploadRequest(c)
}

// A class rather than arrow functions: see NodeUploadRequest (direct-dispatch.ts).
class HonoUploadRequest implements UploadRequest {
  constructor(private readonly c: Context) {}

  header(lowerCaseName: string): string | undefined {
    return this.c.req.header(lowerCaseName)
  }

  readBody(limit: number, memory?: BodyMemory): Promise<Buffer> {
    return readRequestBody(this.c, limit, memory)
  }
}

/**
 * What the spec lets a 202 confirm about an upload, and nothing more: an allowed Content-Type, a
 * body under the size limit, valid gzip when declared gzip, not empty. Lines are not parsed here.
 */
export function uploadEncoding(request: UploadRequest): 'gzip' | 'identity' {
  const type = (request.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  const contentEncoding = (request.header('content-encoding') ?? 'identity').trim().toLowerCase()
  if (type === 'application/x-gzip' || type === 'application/gzip') return 'gzip'
  if (type === 'application/json') {
    if (contentEncoding === 'gzip' || contentEncoding === 'x-gzip') return 'gzip'
    if (contentEncoding === 'identity' || contentEncoding === '') return 'identity'
    throw unsupportedMediaType(`Content-Encoding ${contentEncoding} is not supported; use gzip`)
  }
  throw unsupportedMediaType(
    `Content-Type must be application/json or application/x-gzip${type ? `, not ${type}` : ''}`,
  )
}

/**
 * The body, once the checks a 202 promises passed. Not an async function: a plain body (the
 * common case) is checked in the read's own continuation, one suspended frame fewer per upload.
 */
export function readUploadBody(
  request: UploadRequest,
  encoding: 'gzip' | 'identity',
  limits: UploadLimits,
  checkGzip: GzipCheck,
  memory?: BodyMemory,
): Promise<Buffer> {
  return request
    .readBody(limits.maxBytes, memory)
    .then((body) => (encoding === 'gzip' ? checkedGzip(body, limits, checkGzip) : checkedPlain(body)))
}

function checkedPlain(body: Buffer): Buffer {
  if (!hasContent(body)) throw badRequest('empty body: send one JSON object per line')
  return body
}

async function checkedGzip(body: Buffer, limits: UploadLimits, checkGzip: GzipCheck): Promise<Buffer> {
  if (body.length === 0) throw badRequest('empty body: send one JSON object per line')
  const check = await checkGzip(body, limits.maxInflatedBytes).catch((err: unknown) => {
    // Nothing is wrong with the body: the client sends it again.
    throw unavailable(1, 'the gzip check could not run; retry', err)
  })
  if (check.kind === 'invalid') throw badRequest('body is not valid gzip')
  if (check.kind === 'too_large')
    throw payloadTooLarge(`body inflates to ${humanBytes(limits.maxInflatedBytes)} or more`)
  // The same answer as the same body sent plain.
  if (!check.hasContent) throw badRequest('empty body: send one JSON object per line')
  return body
}

function humanBytes(n: number): string {
  return n >= 1048576 ? `${Math.round(n / 1048576)} MB` : `${Math.round(n / 1024)} KB`
}
