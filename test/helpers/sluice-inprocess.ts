import { loadConfig } from '../../services/config.ts'
import { startProcess, type RunningProcess } from '../../services/processes.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { ADMIN_TOKEN } from './edge.ts'
import { tempDir } from './temp.ts'
import { documentedFetch } from './openapi-check.ts'

export interface InProcessSluice {
  running: RunningProcess
  url: string
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<T>
  /** Create an org with one app (app_id given) and an all-scopes key. */
  tenant(name: string, appIds: string[]): Promise<{ orgId: number; auth: string; apiKey: string }>
  close(): Promise<void>
}

/** A configuration for a test's Sluice: its data directory, loopback ports chosen by the OS, `env`. */
export function testConfig(dataDir: string, env: Record<string, string>) {
  return loadConfig({
    SLUICE_DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    SLUICE_SQL_PORT: '0',
    SLUICE_ADMIN_TOKEN: ADMIN_TOKEN,
    ...env,
  })
}

/**
 * A whole Sluice (edge + workers + scheduler) in this test process. Embedded unless `env` names
 * Kafka brokers and a ClickHouse URL, in which case the same code runs against those. With
 * `dataDir`, the data directory is the caller's and stays after `close()`.
 */
export async function startInProcess(
  env: Record<string, string> = {},
  options: { dataDir?: string } = {},
): Promise<InProcessSluice> {
  // A given data directory outlives this process (a restart test reopens it); a temporary one does not.
  const dir = options.dataDir ? { path: options.dataDir, cleanup: async () => {} } : await tempDir('sluice')
  const config = testConfig(dir.path, {
    SLUICE_PARTITIONS: '4',
    // A loaded test machine can take longer than the 10 s default to apply a control command; the
    // bound itself has a test of its own (control-plane-embedded).
    SLUICE_CONTROL_WAIT_MS: '60000',
    ...env,
  })
  // SLUICE_TEST_LOG=debug shows the process's logs (through console, which vitest relays).
  const logger = createLogger(process.env.SLUICE_TEST_LOG ?? 'silent', {
    write: (line: string) => console.error(line.trimEnd()),
  })
  const running = await startProcess(config, logger, ['edge', 'worker', 'scheduler'])
  const url = running.url!
  const admin = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await documentedFetch(`${url}/admin/v1${path}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`admin ${method} ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as T
  }
  return {
    running,
    url,
    admin,
    async tenant(name, appIds) {
      const org = await admin<{ id: number }>('POST', '/orgs', { name })
      for (const app_id of appIds) await admin('POST', `/orgs/${org.id}/apps`, { name: app_id, app_id })
      const key = await admin<{ api_key: string; api_secret: string }>('POST', `/orgs/${org.id}/keys`, {})
      return {
        orgId: org.id,
        apiKey: key.api_key,
        auth: `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`,
      }
    },
    async close() {
      await running.shutdown()
      await dir.cleanup()
    },
  }
}
