import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import { LocalLog, type LocalLogOptions } from '../../pipelines/connectors/bus/local-log/local-log.ts'

/**
 * Temporary log directories and the LocalLogs opened on them, closed and removed after each test
 * of the calling file (call it at the file's top level, where vitest takes its afterEach).
 */
export function localLogTestbed(prefix: string, defaults: Pick<LocalLogOptions, 'partitions'>) {
  const openLogs: LocalLog[] = []
  const dirs: string[] = []

  afterEach(async () => {
    await Promise.all(openLogs.splice(0).map((log) => log.close()))
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
  })

  return {
    tempDir: async (): Promise<string> => {
      const dir = await mkdtemp(join(tmpdir(), `sluice-${prefix}-`))
      dirs.push(dir)
      return dir
    },
    openLog: (path: string, options: Partial<LocalLogOptions> = {}): LocalLog => {
      const log = LocalLog.open({ path, retention: { intervalMs: 0 }, ...defaults, ...options })
      openLogs.push(log)
      return log
    },
    /** Closes a log before the test ends (the testbed then leaves it alone). */
    closeLog: async (log: LocalLog): Promise<void> => {
      openLogs.splice(openLogs.indexOf(log), 1)
      await log.close()
    },
  }
}
