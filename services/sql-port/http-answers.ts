/**
 * The port's answers, as a ClickHouse server sends them: a result with its X-ClickHouse-* headers and
 * the response encoding the client accepts, an error with its code, the health check and 404.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import {
  contentTypeFor,
  errorBody,
  httpStatusForCode,
  type HttpParams,
  type SqlPortError,
} from './clickhouse-protocol.ts'
import { header } from './http-request.ts'
import type { QueryResult } from './statement-execution.ts'

/** Who answers, in every answer's headers and error bodies. */
export interface ServerIdentity {
  displayName: string
  /** The engine's version. */
  version: string
  /** The engine's time zone (X-ClickHouse-Timezone). */
  timezone: string
}

const gzip = promisify(zlib.gzip)
const deflate = promisify(zlib.deflate)
const brotli = promisify(zlib.brotliCompress)

/** A statement's result, compressed when the client asked for it and accepts an encoding. */
export async function sendResult(
  req: IncomingMessage,
  res: ServerResponse,
  server: ServerIdentity,
  result: QueryResult,
  queryId: string,
  elapsedNs: bigint,
  http: HttpParams,
): Promise<void> {
  const summary = {
    read_rows: '0',
    read_bytes: '0',
    written_rows: '0',
    written_bytes: '0',
    total_rows_to_read: '0',
    result_rows: '0',
    result_bytes: String(result.bytes.length),
    elapsed_ns: String(elapsedNs),
  }
  const headers: Record<string, string> = {
    'Content-Type': contentTypeFor(result.format),
    'X-ClickHouse-Server-Display-Name': server.displayName,
    'X-ClickHouse-Query-Id': queryId,
    'X-ClickHouse-Format': result.format,
    'X-ClickHouse-Timezone': server.timezone,
    'X-ClickHouse-Summary': JSON.stringify(summary),
  }
  let payload = result.bytes
  const encoding = http.enableHttpCompression
    ? responseEncoding(header(req.headers, 'accept-encoding'))
    : undefined
  if (encoding) {
    const level = http.compressionLevel ?? 3
    payload =
      encoding === 'gzip'
        ? await gzip(payload, { level })
        : encoding === 'deflate'
          ? await deflate(payload, { level })
          : await brotli(payload)
    headers['Content-Encoding'] = encoding
    headers['Vary'] = 'Accept-Encoding'
  }
  headers['Content-Length'] = String(payload.length)
  res.writeHead(200, headers)
  res.end(payload)
}

/** A ClickHouse error answer, or a dropped connection once the headers have gone out. */
export function sendError(
  req: IncomingMessage,
  res: ServerResponse,
  server: ServerIdentity,
  err: SqlPortError,
  queryId: string,
  drained: boolean,
): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const body = Buffer.from(errorBody(err, server.version))
  const status = httpStatusForCode(err.code)
  const headers: Record<string, string> = {
    'Content-Type': 'text/plain; charset=UTF-8',
    'Content-Length': String(body.length),
    'X-ClickHouse-Server-Display-Name': server.displayName,
    'X-ClickHouse-Query-Id': queryId,
    'X-ClickHouse-Exception-Code': String(err.code),
  }
  if (status === 401) headers['WWW-Authenticate'] = 'Basic realm="ClickHouse server"'
  if (!drained) {
    // The body was refused unread: discard what still arrives, then drop the connection.
    headers['Connection'] = 'close'
    req.resume()
  }
  res.writeHead(status, headers)
  res.end(body)
}

/** The health check answer (`/`, `/ping`, `/replicas_status`). */
export function sendOk(req: IncomingMessage, res: ServerResponse): void {
  req.resume()
  res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8', 'Content-Length': '4' })
  res.end('Ok.\n')
}

export function sendNotFound(req: IncomingMessage, res: ServerResponse, path: string): void {
  req.resume()
  const body = Buffer.from(
    `There is no handle ${path}\n\nUse / or /ping for health checks.\n\nSend queries from your program with POST method or GET /?query=...\n`,
  )
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8', 'Content-Length': String(body.length) })
  res.end(body)
}

function responseEncoding(accept: string | undefined): 'gzip' | 'deflate' | 'br' | undefined {
  if (!accept) return undefined
  const offered = accept
    .toLowerCase()
    .split(',')
    .map((part) => part.trim().split(';')[0])
  if (offered.includes('gzip')) return 'gzip'
  if (offered.includes('br')) return 'br'
  if (offered.includes('deflate')) return 'deflate'
  return undefined
}
