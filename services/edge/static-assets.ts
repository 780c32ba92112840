import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { gzipSync } from 'node:zlib'
import type { Context } from 'hono'
import { notFound } from '../shared/errors.ts'

/** A file a browser page loads: where it is on disk and its Content-Type. */
export interface AssetFile {
  path: string
  type: string
}

interface Loaded {
  raw: Buffer
  gzip: Buffer
  etag: string
  type: string
}

const require = createRequire(import.meta.url)

/** The path of a file inside an installed npm package (node_modules), e.g. ('uplot', 'dist/uPlot.min.css'). */
export function packageFile(pkg: string, file: string): string {
  return require.resolve(`${pkg}/${file}`)
}

/**
 * The scripts and styles of the browser pages (the API reference, the dashboard), served from
 * memory by name. Only the names listed are served, so no request path reaches the file system;
 * each is read and gzipped once, on first use, and answered with an ETag so a reload costs a 304.
 */
export class StaticAssets {
  private readonly loaded = new Map<string, Loaded>()

  constructor(private readonly files: Readonly<Record<string, AssetFile>>) {}

  serve(c: Context, name: string): Response {
    const asset = this.load(name)
    if (c.req.header('If-None-Match') === asset.etag) return c.body(null, 304, { ETag: asset.etag })
    const gzip = /\bgzip\b/.test(c.req.header('Accept-Encoding') ?? '')
    const body = gzip ? asset.gzip : asset.raw
    return c.body(new Uint8Array(body), 200, {
      'Content-Type': asset.type,
      ETag: asset.etag,
      'Cache-Control': 'no-cache',
      Vary: 'Accept-Encoding',
      'X-Content-Type-Options': 'nosniff',
      ...(gzip && { 'Content-Encoding': 'gzip' }),
    })
  }

  private load(name: string): Loaded {
    const known = this.loaded.get(name)
    if (known) return known
    const file = Object.hasOwn(this.files, name) ? this.files[name] : undefined
    if (!file) throw notFound('no such file')
    const raw = readFileSync(file.path)
    const loaded = {
      raw,
      gzip: gzipSync(raw, { level: 9 }),
      etag: `"${createHash('sha256').update(raw).digest('base64url').slice(0, 22)}"`,
      type: file.type,
    }
    this.loaded.set(name, loaded)
    return loaded
  }
}
