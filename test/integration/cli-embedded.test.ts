import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { createClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runSluice, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`

// Tests here start Sluice twice: more than one helper's time limit, so more than vitest's default.
describe('sluice start (embedded, as a user runs it)', { timeout: 120_000 }, () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  beforeAll(async () => {
    dir = await tempDir('cli')
  })
  afterAll(async () => {
    await sluice?.stop()
    await dir.cleanup()
  })

  it('generates an admin token once, stored with mode 0600', async () => {
    sluice = await startSluice({ SLUICE_DATA_DIR: dir.path })
    const token = /admin token \(generated.*\): (\S+)/.exec(sluice.output())?.[1]
    expect(token).toBeDefined()
    const info = await stat(join(dir.path, 'admin-token'))
    expect(info.mode & 0o777).toBe(0o600)
    expect(await (await fetch(`${sluice.url}/healthz`)).json()).toEqual({ status: 'ok' })
    expect(await sluice.stop()).toBe(0)
    sluice = await startSluice({ SLUICE_DATA_DIR: dir.path })
    expect(sluice.output()).not.toMatch(/admin token \(generated/)
    await sluice.stop()
    sluice = undefined
  })

  it('serves the admin API, auth check and SQL port, and survives kill -9', async () => {
    const token = 'cli-test-admin-token-1234'
    const env = { SLUICE_DATA_DIR: dir.path, SLUICE_ADMIN_TOKEN: token }
    sluice = await startSluice(env)
    const cli = (...args: string[]) => runSluice(['admin', ...args, '--url', sluice!.url], env)

    const org = await cli('orgs', 'create', '--name', 'Acme')
    expect(org.code).toBe(0)
    const orgBody = JSON.parse(org.stdout) as { id: number; name: string; profiledb_id: number }
    expect(orgBody).toEqual({ id: expect.any(Number), name: 'Acme', profiledb_id: expect.any(Number) })
    const app = JSON.parse(
      (await cli('apps', 'create', '--org', String(orgBody.id), '--name', 'iOS')).stdout,
    ) as {
      app_id: string
      org_id: number
    }
    expect(app.org_id).toBe(orgBody.id)
    const key = JSON.parse((await cli('keys', 'create', '--org', String(orgBody.id))).stdout) as {
      api_key: string
      api_secret: string
      scopes: string[]
    }
    expect(key.scopes).toContain('events')

    const check = await fetch(`${sluice.url}/v1/auth/check`, {
      headers: { Authorization: basic(key.api_key, key.api_secret) },
    })
    expect(await check.json()).toEqual({ org_id: orgBody.id, scopes: key.scopes })
    const wrong = await fetch(`${sluice.url}/v1/auth/check`, {
      headers: { Authorization: basic(key.api_key, 'nope') },
    })
    expect(wrong.status).toBe(401)

    expect(sluice.sqlUrl).toBeDefined()
    const select = await fetch(`${sluice.sqlUrl}/?query=${encodeURIComponent('SELECT 1')}`, {
      headers: { Authorization: basic('admin', token) },
    })
    expect(await select.text()).toBe('1\n')
    const create = await fetch(`${sluice.sqlUrl}/`, {
      method: 'POST',
      headers: { Authorization: basic('admin', token) },
      body: 'CREATE TABLE evil (x UInt8) ENGINE = Memory',
    })
    expect(create.ok).toBe(false)
    expect(await create.text()).toMatch(/READONLY|readonly/)
    const client = createClient({ url: sluice.sqlUrl, username: 'admin', password: token })
    const orgs = await (
      await client.query({ query: 'SELECT name FROM orgs FINAL ORDER BY id', format: 'JSONEachRow' })
    ).json()
    expect(orgs).toEqual([{ name: 'Acme' }])
    await client.close()

    await sluice.kill9()
    sluice = await startSluice(env)
    const after = await fetch(`${sluice.url}/v1/auth/check`, {
      headers: { Authorization: basic(key.api_key, key.api_secret) },
    })
    expect(await after.json()).toEqual({ org_id: orgBody.id, scopes: key.scopes })
    const apps = JSON.parse(
      (await runSluice(['admin', 'apps', 'list', '--org', String(orgBody.id), '--url', sluice.url], env))
        .stdout,
    ) as {
      app_id: string
    }[]
    expect(apps.map((a) => a.app_id)).toEqual([app.app_id])
    // The scheduler's heartbeat (emitted at each start, run by the control applier) is listed.
    const listJobs = async () =>
      JSON.parse((await runSluice(['admin', 'jobs', 'list', '--url', sluice!.url], env)).stdout) as {
        job: string
        status: number
      }[]
    const jobs = await waitFor(listJobs, (list) => list.length > 0, { what: 'a heartbeat run' })
    // Every job runs at the first tick (the heartbeat and the other areas' jobs, e.g. audience-counts).
    expect(jobs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ job: 'heartbeat', status: 200 }),
        expect.objectContaining({ job: 'audience-counts', status: 200 }),
      ]),
    )
  })

  it('a child that fails or overruns its time limit is killed, and the error carries its output', async () => {
    const bad = { SLUICE_DATA_DIR: dir.path, PORT: 'eighty' }
    await expect(startSluice(bad)).rejects.toThrow(
      /^sluice start exited with 78 before starting; output:\n.*PORT="eighty"/s,
    )
    // Limits no start can meet: the helpers give up, kill the child and say so.
    await expect(startSluice(bad, ['start'], 1)).rejects.toThrow(
      /^sluice start did not start within 1 ms \(killed\); output:/,
    )
    await expect(runSluice(['start'], bad, 1)).rejects.toThrow(
      /^sluice start did not finish within 1 ms \(killed\); stdout:\n.*\nstderr:/s,
    )
  })

  it('stops with a message naming a bad variable', async () => {
    const result = await runSluice(['start'], { SLUICE_DATA_DIR: dir.path, PORT: 'eighty' })
    expect(result.code).toBe(78)
    expect(result.stderr).toMatch(/PORT="eighty"/)
  })

  it('answers a bad admin flag with the usage, and --help with the usage on stdout', async () => {
    const env = { SLUICE_DATA_DIR: dir.path }
    const bad = await runSluice(['admin', 'orgs', 'list', '--bogus'], env)
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^sluice admin: Unknown option '--bogus'/)
    expect(bad.stderr).toContain('usage: sluice <command>')
    expect(bad.stderr).not.toMatch(/\n\s+at /)
    const missing = await runSluice(['admin', 'orgs', 'create', '--name'], env)
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^sluice admin: Option '--name <value>' argument missing/)
    const help = await runSluice(['admin', 'push-transport', '--help'], env)
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('admin push-transport')
    expect(help.stderr).toBe('')
  })
})
