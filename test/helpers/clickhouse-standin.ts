/**
 * ClickHouse for tests: the server named by CLICKHOUSE_URL when set, otherwise a local stand-in for a
 * ClickHouse server, backed by chdb; not a real server (test/fixtures/clickhouse-standin-server.ts in
 * a child process, speaking ClickHouse's HTTP interface through the writable SQL port).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const FIXTURE = fileURLToPath(new URL('../fixtures/clickhouse-standin-server.ts', import.meta.url))
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface ClickHouseStandin {
  url: string
  port: number
  /** The stand-in's process (the bench reads its CPU time as the engine's). */
  pid: number
  dataDir: string
  /** SIGTERM, then removes the data directory (unless the caller gave it). */
  stop(): Promise<void>
  /** SIGKILL: a server that stops answering at once; its data directory stays, to start it again on. */
  kill(): Promise<void>
}

export interface ClickHouseForTests {
  url: string
  username: string
  password: string
  /** Which one the tests got: a real server from the environment, or the chdb-backed stand-in. */
  source: 'CLICKHOUSE_URL' | 'chdb-standin'
  /** The stand-in's process; undefined for a server from the environment. */
  pid?: number
  stop(): Promise<void>
}

/**
 * Starts the chdb-backed stand-in on a fresh temporary data directory, which stop() removes; or, to
 * bring a killed one back, on its data directory and port (`at`), which stay the caller's.
 */
export async function startClickHouseStandin(
  timeoutMs = 60_000,
  at?: { dataDir: string; port: number },
): Promise<ClickHouseStandin> {
  const dataDir = at?.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-ch-standin-')))
  const owned = at === undefined
  const args = ['--import', 'tsx', FIXTURE, dataDir, ...(at ? [String(at.port)] : [])]
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))

  let port: number
  try {
    port = await new Promise<number>((resolve, reject) => {
      let stdout = ''
      const timer = setTimeout(
        () => reject(new Error(`ClickHouse stand-in did not start in ${timeoutMs} ms:\n${output}`)),
        timeoutMs,
      )
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString()
        output += d.toString()
        const match = /^LISTENING (\d+)$/m.exec(stdout)
        if (match) {
          clearTimeout(timer)
          resolve(Number(match[1]))
        }
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`ClickHouse stand-in exited with ${code} before listening:\n${output}`))
      })
    })
  } catch (err) {
    child.kill('SIGKILL')
    await exited
    if (owned) await rm(dataDir, { recursive: true, force: true })
    throw err
  }

  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid ?? 0,
    dataDir,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
    stop: () => {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM')
          const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
          await exited
          clearTimeout(timer)
        }
        if (owned) await rm(dataDir, { recursive: true, force: true })
      })()
      return stopped
    },
  }
}

/** CLICKHOUSE_URL (with CLICKHOUSE_USER / CLICKHOUSE_PASSWORD) when set, else the chdb-backed stand-in. */
export async function clickhouseForTests(): Promise<ClickHouseForTests> {
  const url = process.env.CLICKHOUSE_URL
  if (url) {
    return {
      url,
      username: process.env.CLICKHOUSE_USER ?? 'default',
      password: process.env.CLICKHOUSE_PASSWORD ?? '',
      source: 'CLICKHOUSE_URL',
      stop: async () => undefined,
    }
  }
  const standin = await startClickHouseStandin()
  return {
    url: standin.url,
    username: 'default',
    password: '',
    source: 'chdb-standin',
    pid: standin.pid,
    stop: () => standin.stop(),
  }
}
