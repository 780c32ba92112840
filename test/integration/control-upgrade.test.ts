import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { MIGRATIONS_DIR, migrate } from '../../pipelines/connectors/store/migrations.ts'
import { adminHeaders, basic } from '../helpers/edge.ts'
import { writeOldControlRows, OLD } from '../helpers/old-control-rows.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * A data directory written before the control plane took commands (migrations 001-009, ids
 * allocated as max + 1 by the edge itself) keeps working after the upgrade: its orgs, apps and keys
 * stay as they were, and the control applier allocates the next ids after theirs.
 */
describe('control plane: upgrade of a data directory written before control commands', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let sluice: InProcessSluice

  beforeAll(async () => {
    dir = await tempDir('control-upgrade')
    const before = join(dir.path, 'migrations-before')
    await mkdir(before)
    for (const file of await readdir(MIGRATIONS_DIR))
      if (/^00\d_.*\.sql$/.test(file)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file))
    const store = await ChdbStore.open(join(dir.path, 'clickhouse'))
    await migrate(store, before)
    await writeOldControlRows(store)
    await store.close()
    sluice = await startInProcess({}, { dataDir: dir.path })
  })
  afterAll(async () => {
    await sluice?.close()
    await dir?.cleanup()
  })

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${sluice.url}/admin/v1${path}`, {
      method,
      headers: adminHeaders,
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  it('keeps the old orgs, apps and keys, and allocates the next ids after theirs', async () => {
    expect(await (await admin('GET', '/orgs')).json()).toEqual(OLD.orgs)
    const org = await admin('POST', '/orgs', { name: 'after upgrade' })
    expect(org.status).toBe(201)
    expect(await org.json()).toEqual({
      id: OLD.maxOrgId + 1,
      name: 'after upgrade',
      profiledb_id: OLD.maxProfileDbId + 1,
    })

    const taken = await admin('POST', `/orgs/${OLD.orgs[0]!.id}/apps`, {
      name: 'again',
      app_id: OLD.app.app_id,
    })
    expect(taken.status).toBe(409)
    const app = await admin('POST', `/orgs/${OLD.orgs[0]!.id}/apps`, { name: 'new', app_id: 'new-app' })
    expect(await app.json()).toEqual({
      app_id: 'new-app',
      org_id: OLD.orgs[0]!.id,
      name: 'new',
      profiledb_id: OLD.maxProfileDbId + 2,
    })
    expect(await (await admin('GET', `/orgs/${OLD.orgs[0]!.id}/apps`)).json()).toEqual([
      OLD.app,
      { app_id: 'new-app', org_id: OLD.orgs[0]!.id, name: 'new', profiledb_id: OLD.maxProfileDbId + 2 },
    ])
  })

  it('an old key authenticates until it is revoked through a command; an old revocation stands', async () => {
    const auth = basic(OLD.key.api_key, OLD.key.api_secret)
    const check = await fetch(`${sluice.url}/v1/auth/check`, { headers: auth })
    expect(await check.json()).toEqual({ org_id: OLD.orgs[0]!.id, scopes: [...OLD.key.scopes, 'query'] }) // every scope of its time: query too
    const revokedBefore = basic(OLD.revokedKey.api_key, OLD.revokedKey.api_secret)
    expect((await fetch(`${sluice.url}/v1/auth/check`, { headers: revokedBefore })).status).toBe(401)

    const orgId = OLD.orgs[0]!.id
    expect((await admin('DELETE', `/orgs/${orgId}/keys/${OLD.revokedKey.api_key}`)).status).toBe(404)
    expect((await admin('DELETE', `/orgs/${orgId}/keys/${OLD.key.api_key}`)).status).toBe(204)
    expect((await fetch(`${sluice.url}/v1/auth/check`, { headers: auth })).status).toBe(401)
    const keys = (await (await admin('GET', `/orgs/${orgId}/keys`)).json()) as {
      api_key: string
      revoked: boolean
    }[]
    expect(keys.map((k) => [k.api_key, k.revoked]).sort()).toEqual(
      [
        [OLD.key.api_key, true],
        [OLD.revokedKey.api_key, true],
      ].sort(),
    )
  })
})
