import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url))

/**
 * Time limits of the helpers, each well below vitest's 120 s test timeout, so a child that hangs
 * fails its own step with the child's output in the error instead of timing out the whole test
 * without a word. A start takes ~2 s on an idle 2-core machine, but two workers starting side by
 * side on a saturated one took 29–31 s: the limit bounds a hang, not a start's speed.
 */
export const START_TIMEOUT_MS = 60_000
/** Above the child's own graceful-shutdown limit (SLUICE_SHUTDOWN_TIMEOUT_MS, 15 s by default). */
export const STOP_TIMEOUT_MS = 20_000
export const RUN_TIMEOUT_MS = 20_000

export interface SluiceChild {
  child: ChildProcess
  url: string
  sqlUrl: string | undefined
  /** Health, readiness and metrics of a child without an edge (`sluice worker`, `sluice scheduler`). */
  opsUrl: string | undefined
  output: () => string
  /** SIGTERM and wait for exit; returns the exit code. Past the limit: SIGKILL, and an error. */
  stop(timeoutMs?: number): Promise<number | null>
  /** SIGKILL: a crash, no shutdown of any kind. */
  kill9(): Promise<void>
}

/**
 * Run `sluice <command>` as a child process and wait for its start-up banner. `direct`: run
 * bin/sluice.js itself (its `#!/bin/sh` line), as `bin/sluice.js start` in a shell does, instead of
 * `node bin/sluice.js`.
 */
export async function startSluice(
  env: Record<string, string>,
  command: string[] = ['start'],
  timeoutMs = START_TIMEOUT_MS,
  direct = false,
): Promise<SluiceChild> {
  const child = spawn(direct ? BIN : process.execPath, direct ? command : [BIN, ...command], {
    // Ports of their own (0: any free one), so several children can run on one machine.
    env: {
      ...process.env,
      PORT: '0',
      SLUICE_SQL_PORT: '0',
      SLUICE_OPS_PORT: '0',
      SLUICE_LOG_LEVEL: 'warn',
      SLUICE_CONTROL_WAIT_MS: '60000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const exited = exitOf(child)
  const what = `sluice ${command.join(' ')}`
  const started = await settleWithin(
    timeoutMs,
    new Promise<boolean>((resolve) => {
      const check = () => {
        if (/API:\s+http:\/\/\S+/.test(out) || /running \(/.test(out)) resolve(true)
      }
      child.stdout.on('data', check)
      void exited.then(() => resolve(false))
    }),
  )
  if (started !== true) {
    child.kill('SIGKILL')
    const code = await exited
    throw new Error(
      started === undefined
        ? `${what} did not start within ${timeoutMs} ms (killed); output:\n${out}`
        : `${what} exited with ${code} before starting; output:\n${out}`,
    )
  }
  const url = /API:\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
  const sqlUrl = /SQL port:\s+(http:\/\/\S+)/.exec(out)?.[1]
  const opsUrl = /ops:\s+(http:\/\/\S+)/.exec(out)?.[1]
  return {
    child,
    url,
    sqlUrl,
    opsUrl,
    output: () => out,
    async stop(stopTimeoutMs = STOP_TIMEOUT_MS) {
      child.kill('SIGTERM')
      const code = await settleWithin(stopTimeoutMs, exited)
      if (code !== undefined) return code
      child.kill('SIGKILL')
      await exited
      throw new Error(`${what} did not stop within ${stopTimeoutMs} ms of SIGTERM (killed); output:\n${out}`)
    },
    async kill9() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

/** Run `sluice admin ...` (or any short command) to completion, killed past `timeoutMs`. */
export async function runSluice(
  args: string[],
  env: Record<string, string>,
  timeoutMs = RUN_TIMEOUT_MS,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = exitOf(child)
  const code = await settleWithin(timeoutMs, exited)
  if (code === undefined) {
    child.kill('SIGKILL')
    await exited
    throw new Error(
      `sluice ${args.join(' ')} did not finish within ${timeoutMs} ms (killed); stdout:\n${stdout}\nstderr:\n${stderr}`,
    )
  }
  return { code, stdout, stderr }
}

/** The child's exit code (null when a signal ended it); also settles if it could not be spawned. */
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code))
    child.once('error', () => resolve(child.exitCode))
  })
}

/** What `promise` resolves to, or undefined once `ms` have passed first. */
async function settleWithin<T>(ms: number, promise: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Through a running Sluice's admin API: an org with one app and an all-scopes key; its Basic auth. */
export async function createTenant(
  url: string,
  adminToken: string,
  appId: string,
): Promise<{ orgId: number; auth: string }> {
  const post = async <T>(path: string, body: unknown) => {
    const res = await fetch(`${url}/admin/v1${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`admin POST ${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as T
  }
  const org = await post<{ id: number }>('/orgs', { name: appId })
  await post(`/orgs/${org.id}/apps`, { name: appId, app_id: appId })
  const key = await post<{ api_key: string; api_secret: string }>(`/orgs/${org.id}/keys`, {})
  return {
    orgId: org.id,
    auth: `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`,
  }
}
