import { startProcess, type RunningProcess } from '../../services/processes.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { controlPipeline } from '../../services/worker/control.ts'
import { startWorker } from '../../services/worker/worker.ts'
import { testConfig } from './sluice-inprocess.ts'
import { tempDir } from './temp.ts'

export interface EdgeOnly {
  running: RunningProcess
  close(): Promise<void>
}

/**
 * An edge process with no ingestion behind it, on a temporary data directory, and the control
 * applier beside it (admin writes are control commands); `env` sets its limits.
 */
export async function startEdgeOnly(name: string, env: Record<string, string> = {}): Promise<EdgeOnly> {
  const dir = await tempDir(name)
  const config = testConfig(dir.path, env)
  const running = await startProcess(config, createLogger('silent'), ['edge'])
  const controlWorker = await startWorker(running.runtime, [controlPipeline([])])
  return {
    running,
    async close() {
      await controlWorker.close()
      await running.shutdown()
      await dir.cleanup()
    },
  }
}
