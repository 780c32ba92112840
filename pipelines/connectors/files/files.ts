import type { Readable } from 'node:stream'

/** The Files port: where exports and other generated files live. */
export interface Files {
  put(path: string, data: Buffer | Readable): Promise<void>
  read(path: string): Readable
  /**
   * A file to serve: its bytes and size, or undefined when it is absent, not a regular file, or
   * (through a link) outside the root. What the edge hands out under signed links.
   */
  openRead(path: string): Promise<{ stream: Readable; size: number } | undefined>
  readAll(path: string): Promise<Buffer>
  exists(path: string): Promise<boolean>
  list(prefix: string): Promise<string[]>
  remove(path: string): Promise<void>
  /**
   * Like put, streamed, and durable when it resolves: the file and its directory are fsync'd (an
   * import's body, promised by a 202). Rejects with the stream's error, leaving nothing behind.
   */
  putDurable(path: string, data: Readable): Promise<void>
  /** Renames a file (durably); `to` is replaced if it exists. */
  move(from: string, to: string): Promise<void>
}
