import type { Context } from 'hono'
import { checkGzip, hasContent } from '../../pipelines/events/gzip.ts'
import { badRequest, payloadTooLarge, unsupportedMediaType } from '../shared/errors.ts'
import { readRequestBody } from './read-body.ts'

export interface UploadLimits {
  maxBytes: number
  maxInflatedBytes: number
}

/**
 * What the spec lets a 202 confirm about an upload, and nothing more: an allowed Content-Type, a
 * body under the size limit, valid gzip when declared gzip, not empty. Lines are not parsed here.
 */
export function uploadEncoding(c: Context): 'gzip' | 'identity' {
  const type = (c.req.header('Content-Type') ?? '').split(';')[0]!.trim().toLowerCase()
  const contentEncoding = (c.req.header('Content-Encoding') ?? 'identity').trim().toLowerCase()
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

export async function readUploadBody(
  c: Context,
  encoding: 'gzip' | 'identity',
  limits: UploadLimits,
): Promise<Buffer> {
  const body = await readRequestBody(c, limits.maxBytes)
  if (body.length === 0) throw badRequest('empty body: send one JSON object per line')
  if (encoding === 'gzip') {
    const check = await checkGzip(body, limits.maxInflatedBytes)
    if (check.kind === 'invalid') throw badRequest('body is not valid gzip')
    if (check.kind === 'too_large')
      throw payloadTooLarge(`body inflates to ${humanBytes(limits.maxInflatedBytes)} or more`)
    // The same answer as the same body sent plain.
    if (!check.hasContent) throw badRequest('empty body: send one JSON object per line')
  } else if (!hasContent(body)) {
    throw badRequest('empty body: send one JSON object per line')
  }
  return body
}

function humanBytes(n: number): string {
  return n >= 1048576 ? `${Math.round(n / 1048576)} MB` : `${Math.round(n / 1024)} KB`
}
