import { createHash } from 'node:crypto'
import { isUtf8 } from 'node:buffer'
import yauzl from 'yauzl'

/**
 * Checks an in-app creative file by its content, never by its name alone (docs/campaigns.md,
 * "In-app assets"): an HTML document (UTF-8 text that holds HTML markup) or a zip archive whose
 * central directory names only relative paths inside the archive and whose entries, actually
 * inflated, stay within the caps. A zip must hold an index.html at its root (or in its one
 * top-level folder): that is the page the SDK shows.
 */

export interface AssetLimits {
  /** Largest file (bytes) as uploaded. */
  maxFileBytes: number
  /** Largest total of a zip's entries once inflated. */
  maxUnzippedBytes: number
  /** Most entries in a zip. */
  maxEntries: number
  /** Largest inflated / compressed ratio of a zip as a whole (a size bomb's tell). */
  maxRatio: number
}

export const DEFAULT_ASSET_LIMITS: AssetLimits = {
  maxFileBytes: 5 * 1024 * 1024,
  maxUnzippedBytes: 50 * 1024 * 1024,
  maxEntries: 2000,
  maxRatio: 100,
}

export type AssetCheck =
  | {
      ok: true
      kind: 'html' | 'zip'
      sha256: string
      bytes: number
      entries?: number
      unzippedBytes?: number
    }
  | { ok: false; reason: string }

const ZIP_LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04])
const ZIP_EMPTY = Buffer.from([0x50, 0x4b, 0x05, 0x06])
const HTML_MARKUP =
  /<\s*(?:!doctype\s+html|html|head|body|div|p|span|a|img|script|style|link|meta|title|section|main|header|footer|button|table|form|h[1-6]|svg|canvas|iframe|video|ul|ol)\b/i

const fail = (reason: string): AssetCheck => ({ ok: false, reason })

export async function checkAsset(data: Buffer, fileName: string, limits: AssetLimits): Promise<AssetCheck> {
  if (data.length === 0) return fail('is empty')
  if (data.length > limits.maxFileBytes) return fail(`is larger than ${limits.maxFileBytes} bytes`)
  const sha256 = createHash('sha256').update(data).digest('hex')
  const named = /\.zip$/i.test(fileName) ? 'zip' : /\.html?$/i.test(fileName) ? 'html' : undefined
  if (data.subarray(0, 4).equals(ZIP_EMPTY)) return fail('is an empty zip archive')
  if (data.subarray(0, 4).equals(ZIP_LOCAL)) {
    if (named === 'html') return fail(`is named ${fileName} but is a zip archive`)
    const zip = await checkZip(data, limits)
    if (!zip.ok) return zip
    return {
      ok: true,
      kind: 'zip',
      sha256,
      bytes: data.length,
      entries: zip.entries,
      unzippedBytes: zip.unzippedBytes,
    }
  }
  if (named === 'zip') return fail(`is named ${fileName} but is not a zip archive`)
  if (!isHtml(data)) return fail('is neither an HTML document nor a zip archive')
  return { ok: true, kind: 'html', sha256, bytes: data.length }
}

function isHtml(data: Buffer): boolean {
  const body = data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf ? data.subarray(3) : data
  if (!isUtf8(body) || body.includes(0)) return false
  return HTML_MARKUP.test(body.toString('utf8', 0, Math.min(body.length, 64 * 1024)))
}

/** An entry name that stays inside the archive: relative, no `..`, no drive, no backslash, no NUL. */
export function safeEntryName(name: string): boolean {
  if (name === '' || name.includes('\0') || name.includes('\\')) return false
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return false
  return !name.split('/').some((part) => part === '..')
}

const S_IFMT = 0o170000
const S_IFLNK = 0o120000

async function checkZip(
  data: Buffer,
  limits: AssetLimits,
): Promise<{ ok: true; entries: number; unzippedBytes: number } | { ok: false; reason: string }> {
  let zip: yauzl.ZipFile
  try {
    // decodeStrings: names are decoded (and yauzl refuses absolute and `..` paths itself);
    // validateEntrySizes: an entry that inflates to more than its declared size is an error.
    zip = await openZip(data)
  } catch (err) {
    return { ok: false, reason: `is not a readable zip archive (${(err as Error).message})` }
  }
  const names: string[] = []
  let declared = 0
  let actual = 0
  try {
    for await (const entry of entries(zip)) {
      names.push(entry.fileName)
      if (names.length > limits.maxEntries) throw new Refused(`holds more than ${limits.maxEntries} entries`)
      if (!safeEntryName(entry.fileName))
        throw new Refused(`holds an entry outside the archive: ${JSON.stringify(entry.fileName)}`)
      if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK)
        throw new Refused(`holds a symbolic link: ${JSON.stringify(entry.fileName)}`)
      if (entry.isEncrypted())
        throw new Refused(`holds an encrypted entry: ${JSON.stringify(entry.fileName)}`)
      declared += entry.uncompressedSize
      if (declared > limits.maxUnzippedBytes)
        throw new Refused(`inflates to more than ${limits.maxUnzippedBytes} bytes`)
      if (entry.fileName.endsWith('/')) continue
      // The declared sizes may lie: inflate and count what comes out.
      actual += await inflatedSize(zip, entry, limits.maxUnzippedBytes - actual)
      if (actual > limits.maxUnzippedBytes)
        throw new Refused(`inflates to more than ${limits.maxUnzippedBytes} bytes`)
    }
  } catch (err) {
    zip.close()
    if (err instanceof Refused) return { ok: false, reason: err.message }
    return { ok: false, reason: `is not a readable zip archive (${(err as Error).message})` }
  }
  if (actual > data.length * limits.maxRatio)
    return { ok: false, reason: `inflates more than ${limits.maxRatio} times its size (a size bomb?)` }
  if (!hasIndex(names))
    return { ok: false, reason: 'holds no index.html at its root (or in its one top-level folder)' }
  return { ok: true, entries: names.length, unzippedBytes: actual }
}

class Refused extends Error {}

function hasIndex(names: readonly string[]): boolean {
  if (names.includes('index.html')) return true
  const tops = new Set(names.map((n) => n.split('/')[0]))
  if (tops.size !== 1) return false
  const [top] = tops
  return names.includes(`${top}/index.html`)
}

function openZip(data: Buffer): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(
      data,
      { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true },
      (err, zip) => (err ? reject(err) : resolve(zip)),
    )
  })
}

async function* entries(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  for (;;) {
    const entry = await new Promise<yauzl.Entry | undefined>((resolve, reject) => {
      const onEntry = (e: yauzl.Entry) => done(() => resolve(e))
      const onEnd = () => done(() => resolve(undefined))
      const onError = (err: Error) => done(() => reject(err))
      const done = (then: () => void) => {
        zip.off('entry', onEntry)
        zip.off('end', onEnd)
        zip.off('error', onError)
        then()
      }
      zip.on('entry', onEntry)
      zip.on('end', onEnd)
      zip.on('error', onError)
      zip.readEntry()
    })
    if (!entry) return
    yield entry
  }
}

/** Inflate one entry, counting bytes; stops (and reports past `budget`) as soon as it passes it. */
function inflatedSize(zip: yauzl.ZipFile, entry: yauzl.Entry, budget: number): Promise<number> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) return reject(err)
      let n = 0
      stream.on('data', (chunk: Buffer) => {
        n += chunk.length
        if (n > budget) {
          stream.destroy()
          resolve(n)
        }
      })
      stream.on('end', () => resolve(n))
      stream.on('error', reject)
    })
  })
}

/** A client's file name as Sluice stores and serves it: letters, digits, `.`, `_`, `-`; no leading dot. */
export function assetFileName(given: string | undefined, fallback: string): string {
  const base = (given ?? '').split(/[\\/]/).pop() ?? ''
  const cleaned = base
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(0, 100)
  return cleaned === '' ? fallback : cleaned
}
