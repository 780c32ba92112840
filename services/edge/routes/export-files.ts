import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import { Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { Hono, type Context } from 'hono'
import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { Files } from '../../../pipelines/connectors/files/files.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { fileAtPath, moveCursor } from '../../../pipelines/exports/export-records.ts'
import { checkLink, LINK_PREFIX } from '../../../pipelines/exports/signed-links.ts'
import { notFound, SluiceError } from '../../shared/errors.ts'
import type { Logger } from '../../shared/logger.ts'
import type { EdgeEnv } from '../env.ts'

export interface ExportFileRouteDeps {
  store: Store
  files: Files
  linkKey: Buffer
  logger?: Logger
  clock?: Clock
}

/**
 * Export files under signed links: `GET /files/exports/…?expires=…&sig=…`. No credentials (the
 * link is the credential; an Authorization header a client sends along is ignored): the
 * signature (HMAC, compared in constant time) must match the normalised path and expiry, the
 * link must not have expired, and the path must stay in the exports folder of the files port,
 * symbolic links included.
 *
 *   .log.gz    the hourly raw log: a gzip file, served as is (application/gzip)
 *   .jsonl.gz  audience and profile exports: JSON lines, sent gzip-encoded to a client that
 *              accepts gzip (Content-Encoding: gzip), inflated on the way to one that does not
 *
 * A profile_changes file sent whole moves its export's cursor: the next file starts after it.
 * One that is cut off (the client went away) moves nothing, so no change is lost.
 */
export function exportFileRoutes(deps: ExportFileRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const clock = deps.clock ?? systemClock

  const serve = async (c: Context<EdgeEnv>) => {
    // Hono answers HEAD with the GET route and drops the body: nothing is sent, nothing moves.
    const head = c.req.method === 'HEAD'
    const url = new URL(c.req.url)
    const rawPath = url.pathname.slice(LINK_PREFIX.length)
    const check = checkLink(
      deps.linkKey,
      rawPath,
      url.searchParams.get('expires') ?? undefined,
      url.searchParams.get('sig') ?? undefined,
      Math.floor(clock.now() / 1000),
    )
    if (!check.ok)
      throw new SluiceError(check.status === 403 ? 'forbidden' : 'gone', check.status, check.reason)
    const opened = await deps.files.openRead(check.path)
    if (!opened) throw notFound('this export file no longer exists; request the export again')
    const name = check.path.slice(check.path.lastIndexOf('/') + 1)
    c.header('Cache-Control', 'private, no-store')
    c.header('Content-Disposition', `attachment; filename="${name}"`)
    let body: Readable = opened.stream
    if (name.endsWith('.log.gz')) {
      c.header('Content-Type', 'application/gzip')
      c.header('Content-Length', String(opened.size))
    } else {
      c.header('Content-Type', 'application/x-ndjson; charset=utf-8')
      c.header('Vary', 'Accept-Encoding')
      if (acceptsGzip(c.req.header('Accept-Encoding'))) {
        c.header('Content-Encoding', 'gzip')
        c.header('Content-Length', String(opened.size))
      } else {
        body = opened.stream.pipe(createGunzip())
        opened.stream.once('error', (err) => body.destroy(err))
      }
    }
    if (head) {
      opened.stream.destroy()
      return c.body(null, 200)
    }
    if (name.endsWith('.jsonl.gz')) whenSentWhole(c, body, () => void moveCursorOf(check.path))
    return c.body(Readable.toWeb(body) as ReadableStream, 200)
  }

  /** A changes file sent whole: its export's next file starts after it. */
  const moveCursorOf = async (path: string) => {
    try {
      const file = await fileAtPath(deps.store, path)
      if (file?.file_key === 'changes') await moveCursor(deps.store, file.export_id, file.as_of, clock.now())
    } catch (err) {
      // Not moved: the next file repeats these changes, which loses nothing.
      deps.logger?.error({ err, path }, 'could not move the profile_changes cursor')
    }
  }

  app.get(`${LINK_PREFIX}exports/*`, (c) => serve(c))
  return app
}

/** Accept-Encoding names gzip (or *) without q=0. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false
  return header.split(',').some((part) => {
    const [coding = '', ...params] = part.trim().toLowerCase().split(';')
    if (coding.trim() !== 'gzip' && coding.trim() !== 'x-gzip' && coding.trim() !== '*') return false
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

/**
 * Calls `done` once the response has been handed whole to the connection: 'finish' of the Node
 * response when the edge runs on a Node server, else the end of the body (app.request in tests).
 * A client that goes away first never gets it.
 */
function whenSentWhole(c: Context<EdgeEnv>, body: Readable, done: () => void): void {
  const outgoing = (c.env as { outgoing?: ServerResponse | Http2ServerResponse } | undefined)?.outgoing
  if (outgoing && typeof outgoing.once === 'function') {
    const onFinish = () => done()
    outgoing.once('finish', onFinish)
    outgoing.once('close', () => outgoing.off('finish', onFinish))
    return
  }
  body.once('end', done)
}
