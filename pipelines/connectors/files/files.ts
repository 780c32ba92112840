import type { Readable } from 'node:stream'

/** The Files port: where exports and other generated files live. */
export interface Files {
  put(path: string, data: Buffer | Readable): Promise<void>
  read(path: string): Readable
  readAll(path: string): Promise<Buffer>
  exists(path: string): Promise<boolean>
  list(prefix: string): Promise<string[]>
  remove(path: string): Promise<void>
}
