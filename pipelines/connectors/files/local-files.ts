import { constants, createReadStream } from 'node:fs'
import { mkdir, open, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises'
import { dirname, relative, resolve, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createWriteStream } from 'node:fs'
import { randomUUID } from 'node:crypto'
import type { Files } from './files.ts'

/** Files adapter over a local directory. Every path is resolved inside the root or refused. */
export class LocalFiles implements Files {
  readonly root: string

  constructor(root: string) {
    this.root = resolve(root)
  }

  /** Resolve a relative path inside the root; anything that escapes it (.., absolute, NUL) is refused. */
  resolvePath(path: string): string {
    if (path.includes('\0') || path.startsWith('/') || path.startsWith('\\'))
      throw new Error(`invalid path: ${path}`)
    const full = resolve(this.root, path)
    const rel = relative(this.root, full)
    if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..'))
      throw new Error(`invalid path: ${path}`)
    return full
  }

  /** Written to a temporary name and renamed, so a reader never sees half a file. */
  async put(path: string, data: Buffer | Readable): Promise<void> {
    const full = this.resolvePath(path)
    await mkdir(dirname(full), { recursive: true })
    const tmp = `${full}.${randomUUID()}.tmp`
    try {
      if (Buffer.isBuffer(data)) await writeFile(tmp, data)
      else await pipeline(data, createWriteStream(tmp))
      await rename(tmp, full)
    } catch (err) {
      await rm(tmp, { force: true })
      throw err
    }
  }

  read(path: string): Readable {
    return createReadStream(this.resolvePath(path))
  }

  /**
   * Resolved through any symbolic links first: a link (anywhere on the path) that leads outside
   * the root is refused like `..`. The last component is opened without following links, so it
   * cannot be swapped for one after the check.
   */
  async openRead(path: string): Promise<{ stream: Readable; size: number } | undefined> {
    let real: string
    let root: string
    try {
      real = await realpath(this.resolvePath(path))
      root = await realpath(this.root)
    } catch {
      return undefined
    }
    const rel = relative(root, real)
    if (rel === '' || rel.startsWith('..') || rel.split(sep).includes('..') || resolve(root, rel) !== real)
      return undefined
    let handle
    try {
      handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW)
    } catch {
      return undefined
    }
    const info = await handle.stat()
    if (!info.isFile()) {
      await handle.close()
      return undefined
    }
    return { stream: handle.createReadStream(), size: info.size }
  }

  async readAll(path: string): Promise<Buffer> {
    return readFile(this.resolvePath(path))
  }

  async exists(path: string): Promise<boolean> {
    try {
      return (await stat(this.resolvePath(path))).isFile()
    } catch {
      return false
    }
  }

  async list(prefix: string): Promise<string[]> {
    const dir = prefix === '' ? this.root : this.resolvePath(prefix)
    try {
      const entries = await readdir(dir, { recursive: true, withFileTypes: true })
      return entries
        .filter((e) => e.isFile() && !e.name.endsWith('.tmp'))
        .map((e) => relative(this.root, resolve(e.parentPath, e.name)).split(sep).join('/'))
        .sort()
    } catch {
      return []
    }
  }

  async remove(path: string): Promise<void> {
    await rm(this.resolvePath(path), { force: true })
  }

  async putDurable(path: string, data: Readable): Promise<void> {
    const full = this.resolvePath(path)
    await mkdir(dirname(full), { recursive: true })
    const tmp = `${full}.${randomUUID()}.tmp`
    try {
      await pipeline(data, createWriteStream(tmp))
      // fsync is per file, not per descriptor: the data written through the stream is synced.
      const handle = await open(tmp, 'r+')
      try {
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(tmp, full)
      await syncDirectory(dirname(full))
    } catch (err) {
      await rm(tmp, { force: true })
      throw err
    }
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.resolvePath(to)
    await mkdir(dirname(target), { recursive: true })
    await rename(this.resolvePath(from), target)
    await syncDirectory(dirname(target))
  }
}

/** A rename or a new file is durable once its directory is fsync'd. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY)
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
