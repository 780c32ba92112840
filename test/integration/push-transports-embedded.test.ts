import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { p8Key } from '../helpers/apns-standin.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { serviceAccount } from '../helpers/fcm-standin.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runSluice } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { runPushTransportScenario } from './push-transports-scenario.ts'

describe('push transport configuration, embedded mode (local log + chdb)', { timeout: 120_000 }, () => {
  let sluice: InProcessSluice
  let files: Awaited<ReturnType<typeof tempDir>>
  beforeAll(async () => {
    sluice = await startInProcess()
    files = await tempDir('push-cli')
  })
  afterAll(async () => {
    await sluice.close()
    await files.cleanup()
  })

  it('sets, lists (masked) and removes transports, and resolves them to working transports', async () => {
    await runPushTransportScenario(sluice, sluice.running.runtime.store, 'emb')
  })

  it('`sluice admin push-transport` sets each kind from files, lists masked and removes', async () => {
    await sluice.tenant('push-cli', ['cli-app'])
    const env = { SLUICE_ADMIN_TOKEN: ADMIN_TOKEN, SLUICE_DATA_DIR: files.path }
    const cli = async (...args: string[]) => {
      const r = await runSluice(['admin', 'push-transport', ...args, '--url', sluice.url], env, 60_000)
      return {
        code: r.code,
        body: r.stdout.trim() === '' ? undefined : (JSON.parse(r.stdout) as unknown),
        stderr: r.stderr,
      }
    }
    const p8 = p8Key()
    const account = serviceAccount('cli-proj')
    await writeFile(join(files.path, 'AuthKey.p8'), p8.pem)
    await writeFile(join(files.path, 'key.json'), JSON.stringify(account.json))
    await writeFile(join(files.path, 'secret'), 'cli-webhook-secret-0123456789\n')

    const apns = await cli(
      'set',
      '--app',
      'cli-app',
      '--platform',
      'ios',
      '--kind',
      'apns',
      '--key-file',
      join(files.path, 'AuthKey.p8'),
      '--key-id',
      'ABCDE12345',
      '--team-id',
      'TEAM123456',
      '--topic',
      'com.acme.cli',
      '--environment',
      'sandbox',
      '--expiration-seconds',
      '3600',
    )
    expect(apns.code).toBe(0)
    expect(apns.body).toEqual({
      app_id: 'cli-app',
      transports: [
        {
          platform: 'ios',
          kind: 'apns',
          settings: {
            key: expect.stringMatching(/^\*{4}.{4}$/),
            key_id: 'ABCDE12345',
            team_id: 'TEAM123456',
            topic: 'com.acme.cli',
            environment: 'sandbox',
            expiration_seconds: 3600,
            concurrency: 100,
          },
          updated_at: expect.any(String),
        },
      ],
    })
    const fcm = await cli(
      'set',
      '--app',
      'cli-app',
      '--platform',
      'android',
      '--kind',
      'fcm',
      '--service-account-file',
      join(files.path, 'key.json'),
      '--concurrency',
      '20',
    )
    expect(fcm.code).toBe(0)
    expect((fcm.body as { transports: { settings: unknown }[] }).transports[0]!.settings).toEqual({
      service_account: {
        project_id: 'cli-proj',
        client_email: account.json.client_email,
        private_key: expect.stringMatching(/^\*{4}.{4}$/),
        private_key_id: account.json.private_key_id,
      },
      concurrency: 20,
    })

    const list = await cli('list', '--app', 'cli-app')
    expect(list.code).toBe(0)
    expect(
      (list.body as { transports: { platform: string; kind: string }[] }).transports.map((t) => [
        t.platform,
        t.kind,
      ]),
    ).toEqual([
      ['ios', 'apns'],
      ['android', 'fcm'],
    ])
    expect(JSON.stringify(list.body)).not.toContain('PRIVATE KEY')

    const hook = await cli(
      'set',
      '--app',
      'cli-app',
      '--platform',
      'all',
      '--kind',
      'webhook',
      '--webhook-url',
      'https://hooks.example/push',
      '--secret-file',
      join(files.path, 'secret'),
      '--batch-size',
      '10',
    )
    expect(hook.code).toBe(0)
    expect((hook.body as { transports: { settings: unknown }[] }).transports[1]!.settings).toEqual({
      url: 'https://hooks.example/push',
      secret: '****6789',
      timeout_ms: 10_000,
      batch_size: 10,
    })

    const refused = await cli('set', '--app', 'cli-app', '--platform', 'android', '--kind', 'apns')
    expect(refused.code).toBe(1)
    expect((refused.body as { error: string }).error).toMatch(/settings\.key/)
    const usage = await cli('set', '--app', 'cli-app', '--kind', 'file')
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/--platform is required/)

    expect((await cli('remove', '--app', 'cli-app', '--platform', 'all')).code).toBe(0)
    const after = await cli('list', '--app', 'cli-app')
    expect(
      (after.body as { transports: { default?: boolean }[] }).transports.every((t) => t.default === true),
    ).toBe(true)
    expect((await cli('remove', '--app', 'cli-app', '--platform', 'ios')).code).toBe(1)
  })
})
