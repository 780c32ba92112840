import { isUtf8 } from 'node:buffer'
import { parseJsonWellFormed } from '../../pipelines/text/unicode.ts'
import { badRequest, unsupportedMediaType } from '../shared/errors.ts'

/**
 * A JSON body is `application/json` (any parameters, e.g. charset) or a `+json` type. A request
 * without a Content-Type is read as JSON too, since it claims nothing else (real clients of the
 * original service send none); any other type is refused (415) rather than guessed at.
 */
export function requireJsonContentType(header: string | undefined): void {
  if (header === undefined || header.trim() === '') return
  const type = header.split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))) return
  throw unsupportedMediaType(`Content-Type must be application/json, not ${type}`)
}

/**
 * The body as JSON: valid UTF-8 (400 otherwise), strings made well formed for the engine (lone
 * surrogates replaced). `emptyMessage`, when given, is the 400 for an empty body; otherwise an
 * empty body is "not valid JSON".
 */
export function parseJsonBody(body: Buffer, emptyMessage?: string): unknown {
  if (!isUtf8(body)) throw badRequest('request body is not valid UTF-8')
  if (body.length === 0 && emptyMessage !== undefined) throw badRequest(emptyMessage)
  try {
    return parseJsonWellFormed(body.toString('utf8'))
  } catch {
    throw badRequest('request body is not valid JSON')
  }
}
