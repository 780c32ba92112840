import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { SingleBar } from 'cli-progress'

/**
 * `sluice import profiles FILE` and `sluice import audience FILE` (docs/imports.md): streams the
 * file to the import API with a progress bar (bytes sent, rows per second, time left), then follows
 * the import's receipt until it is done and prints it.
 */

export const IMPORT_CLI_OPTIONS = {
  app: { type: 'string' },
  format: { type: 'string' },
  key: { type: 'string' },
  secret: { type: 'string' },
  audience: { type: 'string' },
  mode: { type: 'string' },
  'id-type': { type: 'string' },
  'idempotency-key': { type: 'string' },
  quiet: { type: 'boolean' },
} as const

export const IMPORT_CLI_USAGE = `  import profiles FILE [--app APP_KEY]   profile import (org level, or the app's with --app)
  import audience FILE --org ID --app APP_KEY (--name NAME | --audience ID [--mode replace|add])
                        [--id-type customer_id|email|install_id]
    (FILE .csv, .jsonl or .ndjson, optionally .gz; --format csv|jsonl otherwise; credentials
     --key/--secret or SLUICE_API_KEY/SLUICE_API_SECRET; --idempotency-key KEY; --quiet: no bar)
`

export interface ImportCliValues {
  org?: string
  name?: string
  app?: string
  format?: string
  key?: string
  secret?: string
  audience?: string
  mode?: string
  'id-type'?: string
  'idempotency-key'?: string
  quiet?: boolean
}

export class ImportUsageError extends Error {}

/** The request an import command makes: path (with query) and headers. */
export function importRequest(
  kind: string | undefined,
  file: string | undefined,
  values: ImportCliValues,
): { path: string; headers: Record<string, string>; file: string } {
  if (kind !== 'profiles' && kind !== 'audience')
    throw new ImportUsageError('import profiles FILE or import audience FILE')
  if (!file) throw new ImportUsageError('the file to import is required')
  const name = basename(file).toLowerCase()
  const gzip = name.endsWith('.gz')
  const stem = gzip ? name.slice(0, -3) : name
  const format =
    values.format ??
    (stem.endsWith('.csv') ? 'csv' : stem.endsWith('.jsonl') || stem.endsWith('.ndjson') ? 'jsonl' : '')
  if (format !== 'csv' && format !== 'jsonl')
    throw new ImportUsageError('--format csv|jsonl is required when the file name does not say it')
  const headers: Record<string, string> = {
    'Content-Type': format === 'csv' ? 'text/csv' : 'application/x-ndjson',
    ...(gzip && { 'Content-Encoding': 'gzip' }),
    ...(values['idempotency-key'] && { 'Idempotency-Key': values['idempotency-key'] }),
  }
  if (kind === 'profiles') {
    const path = values.app
      ? `/v1/apps/${encodeURIComponent(values.app)}/imports/profiles`
      : '/v1/imports/profiles'
    return { path, headers, file }
  }
  if (!values.org || !values.app) throw new ImportUsageError('--org and --app are required')
  const query = new URLSearchParams()
  if (values.audience) {
    query.set('audience_id', values.audience)
    if (values.mode) query.set('mode', values.mode)
  } else if (values.name) query.set('name', values.name)
  else throw new ImportUsageError('--name (a new static audience) or --audience ID is required')
  if (values['id-type']) query.set('id_type', values['id-type'])
  const path = `/api/v6/orgs/${encodeURIComponent(values.org)}/apps/${encodeURIComponent(values.app)}/audiences/imports?${query.toString()}`
  return { path, headers, file }
}

interface Receipt {
  state?: string
  rows_read?: number
  [key: string]: unknown
}

export async function runImport(
  base: string,
  auth: string,
  request: ReturnType<typeof importRequest>,
  quiet: boolean,
) {
  const size = (await stat(request.file)).size
  const bar = quiet
    ? undefined
    : new SingleBar({
        format: '{phase} |{bar}| {percentage}% | {sent} | {rate} rows/s | {rows} rows | ETA {eta_formatted}',
        hideCursor: true,
      })
  const started = Date.now()
  let sent = 0
  let lines = 0
  const gzip = request.headers['Content-Encoding'] === 'gzip'
  bar?.start(size, 0, { phase: 'upload', sent: '0 B', rate: 0, rows: gzip ? '?' : 0 })
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      sent += chunk.length
      // Rows are counted as lines of a plain file; a gzip file's rows are counted by the server.
      if (!gzip) for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1)) lines++
      const seconds = Math.max((Date.now() - started) / 1000, 0.001)
      bar?.update(sent, {
        sent: bytes(sent),
        rate: gzip ? '?' : Math.round(lines / seconds),
        rows: gzip ? '?' : lines,
      })
      done(null, chunk)
    },
  })
  const body = Readable.toWeb(createReadStream(request.file).pipe(meter)) as ReadableStream<Uint8Array>
  const answer = await fetch(new URL(request.path, base), {
    method: 'POST',
    headers: { Authorization: auth, ...request.headers, 'Content-Length': String(size) },
    body,
    duplex: 'half',
  })
  const accepted = (await answer.json()) as Record<string, unknown>
  if (answer.status !== 202) {
    bar?.stop()
    return { ok: false, output: accepted }
  }
  const id = accepted.import_id as string
  const receiptPath = request.path.startsWith('/v1/')
    ? `/v1/imports/${id}`
    : `${request.path.split('?')[0]!}/${id}`
  const applying = Date.now()
  let receipt: Receipt = {}
  for (;;) {
    const res = await fetch(new URL(receiptPath, base), { headers: { Authorization: auth } })
    receipt = (await res.json()) as Receipt
    const read = receipt.rows_read ?? 0
    const seconds = Math.max((Date.now() - applying) / 1000, 0.001)
    bar?.update(size, { phase: receipt.state ?? 'queued', rows: read, rate: Math.round(read / seconds) })
    if (!res.ok || receipt.state === 'done' || receipt.state === 'failed') break
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  bar?.stop()
  return { ok: receipt.state === 'done', output: { ...accepted, ...receipt } }
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`
  return `${(n / 1024 ** 3).toFixed(2)} GB`
}
