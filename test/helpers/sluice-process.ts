import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const BIN = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url))

export interface SluiceChild {
  child: ChildProcess
  url: string
  sqlUrl: string | undefined
  output: () => string
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL: a crash, no shutdown of any kind. */
  kill9(): Promise<void>
}

/** Run `sluice <command>` as a child process and wait for its start-up banner. */
export async function startSluice(
  env: Record<string, string>,
  command: string[] = ['start'],
  timeoutMs = 60_000,
): Promise<SluiceChild> {
  const child = spawn(process.execPath, [BIN, ...command], {
    env: { ...process.env, PORT: '0', SLUICE_SQL_PORT: '0', SLUICE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`sluice did not start in ${timeoutMs} ms:\n${out}`)),
      timeoutMs,
    )
    const check = () => {
      if (/API:\s+http:\/\/\S+/.test(out) || /running \(/.test(out)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`sluice exited with ${code} before starting:\n${out}`))
    })
  })
  const url = /API:\s+(http:\/\/\S+)/.exec(out)?.[1] ?? ''
  const sqlUrl = /SQL port:\s+(http:\/\/\S+)/.exec(out)?.[1]
  return {
    child,
    url,
    sqlUrl,
    output: () => out,
    async stop() {
      child.kill('SIGTERM')
      return exited
    },
    async kill9() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

/** Run `sluice admin ...` (or any short command) to completion. */
export async function runSluice(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { code, stdout, stderr }
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
