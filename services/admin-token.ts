import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export const ADMIN_TOKEN_FILE = 'admin-token'

/**
 * The admin token: SLUICE_ADMIN_TOKEN when set; in embedded mode otherwise the one stored in the
 * data directory (mode 0600), generated at first start. `generated` tells the caller to print it.
 */
export async function resolveAdminToken(
  configured: string | undefined,
  dataDir: string,
  allowGenerate: boolean,
): Promise<{ token: string | undefined; generated: boolean }> {
  if (configured) return { token: configured, generated: false }
  const path = join(dataDir, ADMIN_TOKEN_FILE)
  const stored = await readStoredToken(dataDir)
  if (stored) return { token: stored, generated: false }
  if (!allowGenerate) return { token: undefined, generated: false }
  const token = randomBytes(24).toString('base64url')
  await mkdir(dataDir, { recursive: true })
  await writeFile(path, token + '\n', { mode: 0o600, flag: 'wx' }).catch(
    async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err
    },
  )
  await chmod(path, 0o600)
  // Another process may have won the race to create it: the file is the truth.
  const winner = await readStoredToken(dataDir)
  return { token: winner, generated: winner === token }
}

export async function readStoredToken(dataDir: string): Promise<string | undefined> {
  try {
    const text = (await readFile(join(dataDir, ADMIN_TOKEN_FILE), 'utf8')).trim()
    return text === '' ? undefined : text
  } catch {
    return undefined
  }
}
