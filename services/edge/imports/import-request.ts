import { createHash } from 'node:crypto'
import { parse } from 'csv-parse/sync'
import type { ImportFormat } from '../../../schemas/imports.ts'
import { badRequest, unsupportedMediaType } from '../../shared/errors.ts'

/**
 * How an import body is sent (docs/imports.md): CSV (`text/csv`) or JSON lines
 * (`application/x-ndjson`, `application/jsonl`, `application/json`), in UTF-8 (a `charset` other
 * than utf-8 is 415), plain or gzip (`Content-Encoding: gzip`, a gzip Content-Type, or the gzip
 * magic bytes); `?format=csv|jsonl` names the format when the Content-Type does not.
 */
export interface BodyKind {
  format: ImportFormat
  declaredGzip: boolean
}

const CSV_TYPES = new Set(['text/csv', 'application/csv'])
const JSONL_TYPES = new Set([
  'application/x-ndjson',
  'application/jsonl',
  'application/json',
  'application/x-jsonlines',
])
const GZIP_TYPES = new Set(['application/gzip', 'application/x-gzip'])
const NEUTRAL_TYPES = new Set(['application/octet-stream', 'text/plain'])

export function bodyKind(
  contentType: string | undefined,
  contentEncoding: string | undefined,
  formatParam: string | undefined,
): BodyKind {
  const [rawType = '', ...params] = (contentType ?? '').split(';')
  const type = rawType.trim().toLowerCase()
  for (const param of params) {
    const [name, value] = param.split('=').map((s) => s.trim().toLowerCase())
    if (name === 'charset' && value !== 'utf-8' && value !== 'utf8' && value !== '"utf-8"')
      throw unsupportedMediaType(`imports are UTF-8; charset ${value ?? ''} is not supported`)
  }
  const encoding = (contentEncoding ?? '').trim().toLowerCase()
  if (encoding !== '' && encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'x-gzip')
    throw unsupportedMediaType(`Content-Encoding must be gzip or identity, not ${encoding}`)
  let format: ImportFormat | undefined
  if (formatParam !== undefined) {
    if (formatParam !== 'csv' && formatParam !== 'jsonl')
      throw badRequest(`format must be csv or jsonl, not ${JSON.stringify(formatParam.slice(0, 32))}`)
    format = formatParam
  } else if (CSV_TYPES.has(type)) format = 'csv'
  else if (JSONL_TYPES.has(type)) format = 'jsonl'
  const known =
    type === '' ||
    CSV_TYPES.has(type) ||
    JSONL_TYPES.has(type) ||
    GZIP_TYPES.has(type) ||
    NEUTRAL_TYPES.has(type)
  if (!known)
    throw unsupportedMediaType(
      `Content-Type must be text/csv, application/x-ndjson (JSON lines) or application/gzip, not ${type}`,
    )
  if (!format)
    throw badRequest('say the format: a text/csv or application/x-ndjson Content-Type, or ?format=csv|jsonl')
  return { format, declaredGzip: encoding === 'gzip' || encoding === 'x-gzip' || GZIP_TYPES.has(type) }
}

/** The cells of a CSV header line; 400 when it does not parse. */
export function headerCells(line: string): string[] {
  try {
    const rows: string[][] = parse(line, { bom: true, relax_quotes: true })
    return rows[0] ?? []
  } catch (err) {
    throw badRequest(`the CSV header does not parse: ${(err as Error).message}`)
  }
}

/**
 * The import id: the same import sent again (the same Idempotency-Key, or else the same bytes) to
 * the same target gets the same id, and is applied once.
 */
export function importId(parts: {
  org: number
  kind: string
  target: string
  idempotencyKey: string | undefined
  sha256: string
}): string {
  const source = parts.idempotencyKey !== undefined ? `key:${parts.idempotencyKey}` : `body:${parts.sha256}`
  return createHash('sha256')
    .update(`${parts.org}\n${parts.kind}\n${parts.target}\n${source}`)
    .digest('base64url')
    .slice(0, 27)
}
