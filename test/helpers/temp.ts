import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A fresh temporary directory and its cleanup. */
export async function tempDir(prefix: string): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), `sluice-${prefix}-`))
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) }
}
