/**
 * Reading a request the ClickHouse way: header values, the body (decompressed, bounded), and the
 * parameters of the URL and of a multipart form.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http'
import zlib from 'node:zlib'
import { ErrorCode, splitHttpParams, SqlPortError, type HttpParams } from './clickhouse-protocol.ts'

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * ClickHouse's parameters of a request: the URL's, then the fields of a POSTed multipart/form-data
 * body, which then carries no query text. `body` is undefined for a request without one (GET, HEAD).
 */
export function requestParams(
  url: URLSearchParams,
  body: Buffer | undefined,
  contentType: string,
): { http: HttpParams; body: Buffer } {
  if (body && /^multipart\/form-data/i.test(contentType)) {
    return { http: splitHttpParams([...url, ...parseMultipart(body, contentType)]), body: Buffer.alloc(0) }
  }
  return { http: splitHttpParams([...url]), body: body ?? Buffer.alloc(0) }
}

/**
 * The request body, decompressed per Content-Encoding, refused past `limit` bytes (raw or decoded) with
 * QUERY_IS_TOO_LARGE, so a large or highly compressed body cannot exhaust memory.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () =>
    new SqlPortError(
      ErrorCode.QUERY_IS_TOO_LARGE,
      `Request body is too large: the limit of this port is ${limit} bytes`,
    )
  const declared = Number(header(req.headers, 'content-length'))
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge())

  const encoding = (header(req.headers, 'content-encoding') ?? '').trim().toLowerCase()
  let decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined
  if (encoding === 'gzip' || encoding === 'x-gzip') decoder = zlib.createGunzip()
  else if (encoding === 'deflate') decoder = zlib.createInflate()
  else if (encoding === 'br') decoder = zlib.createBrotliDecompress()
  else if (encoding !== '' && encoding !== 'identity') {
    return Promise.reject(
      new SqlPortError(
        ErrorCode.UNKNOWN_COMPRESSION_METHOD,
        `Unknown HTTP compression method ${JSON.stringify(encoding)}`,
      ),
    )
  }

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    let raw = 0
    let decoded = 0
    let done = false
    const fail = (err: Error) => {
      if (done) return
      done = true
      decoder?.destroy()
      reject(err)
    }
    const onDecoded = (chunk: Buffer) => {
      if (done) return
      decoded += chunk.length
      if (decoded > limit) return fail(tooLarge())
      chunks.push(chunk)
    }
    const finish = () => {
      if (done) return
      done = true
      resolve(Buffer.concat(chunks, decoded))
    }
    if (decoder) {
      decoder.on('data', onDecoded)
      decoder.on('end', finish)
      decoder.on('error', (err) =>
        fail(
          new SqlPortError(
            ErrorCode.ZLIB_INFLATE_FAILED,
            `Cannot decompress the request body: ${err.message}`,
          ),
        ),
      )
    }
    req.on('data', (chunk: Buffer) => {
      if (done) return
      raw += chunk.length
      if (raw > limit) return fail(tooLarge())
      if (decoder) decoder.write(chunk)
      else onDecoded(chunk)
    })
    req.on('end', () => (decoder ? decoder.end() : finish()))
    req.on('error', fail)
    req.on('close', () => {
      if (!req.complete) fail(new Error('the client closed the connection before the body ended'))
    })
  })
}

/**
 * Fields of a multipart/form-data body (how clickhouse-js sends large query parameters). File parts
 * would be external tables, which this port does not support.
 */
function parseMultipart(body: Buffer, contentType: string): [string, string][] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType)
  const marker = boundary?.[1] ?? boundary?.[2]
  if (!marker) throw new SqlPortError(ErrorCode.BAD_ARGUMENTS, 'multipart/form-data without a boundary')
  const text = body.toString('utf8')
  const fields: [string, string][] = []
  for (const part of text.split(`--${marker.trim()}`).slice(1)) {
    if (part.startsWith('--')) break
    const split = part.indexOf('\r\n\r\n')
    if (split === -1) continue
    const head = part.slice(0, split)
    let value = part.slice(split + 4)
    if (value.endsWith('\r\n')) value = value.slice(0, -2)
    const disposition = /content-disposition:[^\r\n]*/i.exec(head)?.[0] ?? ''
    if (/filename=/i.test(disposition)) {
      throw new SqlPortError(
        ErrorCode.NOT_IMPLEMENTED,
        'External tables (multipart file parts) are not supported',
      )
    }
    const name = /name="([^"]*)"/i.exec(disposition)?.[1]
    if (name !== undefined) fields.push([name, value])
  }
  return fields
}
