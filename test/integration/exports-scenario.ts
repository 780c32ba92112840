import { request as httpRequest } from 'node:http'
import { gunzipSync } from 'node:zlib'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { exportRefreshJob } from '../../pipelines/exports/export-jobs.ts'
import { postSdk, sdkReceiptDone, uuid } from '../helpers/ingestion-scenario.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { runSluice } from '../helpers/sluice-process.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/**
 * The export contract, run the same way in both modes: every export kind requested through the
 * API, its redirect followed, and every row of every file compared with what was uploaded.
 * Needs SLUICE_EXPORT_PROFILE_CAP=2 and SLUICE_EXPORT_RATE_PER_KEY_PER_MIN=60.
 */

const HOUR = 3_600_000
type Json = Record<string, unknown>

interface Answer {
  status: number
  headers: Headers
  text: string
}

async function get(url: string, auth?: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await documentedFetch(url, {
    redirect: 'manual',
    headers: { ...(auth ? { Authorization: auth } : {}), ...headers },
  })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** A raw request: the path is sent exactly as given (no URL normalisation), no Accept-Encoding. */
function raw(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', headers }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
      )
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

const jsonLines = (text: string): Json[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Json)

const byKey = (rows: Json[], key: string) =>
  [...rows].sort((a, b) => (String(a[key]) < String(b[key]) ? -1 : String(a[key]) > String(b[key]) ? 1 : 0))

export async function runExportScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appI = `exp-i-${suffix}`
  const appB = `exp-b-${suffix}`
  const tenant = await sluice.tenant(`exports-${suffix}`, [appI, appB])
  const other = await sluice.tenant(`exports-other-${suffix}`, [`exp-o-${suffix}`])
  const orgDb = (await sluice.admin<{ profiledb_id: number }>('GET', `/orgs/${tenant.orgId}`)).profiledb_id
  const apps = await sluice.admin<{ app_id: string; profiledb_id: number }[]>(
    'GET',
    `/orgs/${tenant.orgId}/apps`,
  )
  const appIDb = apps.find((a) => a.app_id === appI)!.profiledb_id
  const appBDb = apps.find((a) => a.app_id === appB)!.profiledb_id
  const otherDb = (await sluice.admin<{ profiledb_id: number }>('GET', `/orgs/${other.orgId}`)).profiledb_id
  const api = (path: string, auth = tenant.auth) => get(`${sluice.url}${path}`, auth)
  /** Follows an export's redirect; the file's bytes as the link serves them to fetch (gzip decoded). */
  const follow = async (path: string, auth = tenant.auth) => {
    const first = await api(path, auth)
    expect(first.status, `${path}: ${first.text}`).toBe(302)
    const location = first.headers.get('location')!
    expect(location).toMatch(/^\/files\/exports\/.+\?expires=\d+&sig=[0-9a-f]{64}$/)
    const res = await documentedFetch(`${sluice.url}${location}`)
    expect(res.status).toBe(200)
    return { location, res, body: Buffer.from(await res.arrayBuffer()) }
  }
  const cli = async (...args: string[]) => {
    const run = await runSluice(['admin', ...args, '--url', sluice.url], { SLUICE_ADMIN_TOKEN: ADMIN_TOKEN })
    expect(run.code, run.stdout).toBe(0)
    return JSON.parse(run.stdout) as unknown
  }

  // ---- SDK data: one complete hour three hours back, every log field on some rows.
  const hour = Math.floor((Date.now() - 3 * HOUR) / HOUR) * HOUR
  const at = (minutes: number) => hour + minutes * 60_000 + 123
  const device = (install: string, platform: string, adId: string, extra: Json = {}) => ({
    install_uuid: install,
    device_uuid: `dev-${install}`,
    app_ver: '3.2.1',
    os_ver: platform === 'iOS' ? '17.4' : '14',
    platform,
    model: platform === 'iOS' ? 'iPhone15,2' : 'Pixel 8',
    country: 'fr',
    language: 'fr',
    device_timezone: 'Europe/Paris',
    advertising_id: adId,
    ...extra,
  })
  const full = {
    carrier: 'Orange',
    browser: '',
    bundle_id: 'com.example.app',
    user_type: 'known',
    library_ver: 'iOS_6.1.0',
    birth_date: '1990-04-05',
    lat: 48.8566,
    lng: 2.3522,
    nth: 7,
    sec_since_last_session: 3600,
    device_new: false,
    jailbroken: false,
    limit_advertising: false,
    push_token: 'tok-i1',
    push_status: 'Enabled (Prominent)',
  }
  const i1 = device('inst-i1', 'iOS', 'AAAAAAAA-1111-2222-3333-444444444444', full)
  const i2 = device('inst-i2', 'iOS', 'BBBBBBBB-1111-2222-3333-444444444444', { limit_advertising: true })
  const i3 = device('inst-i3', 'iOS', '00000000-0000-0000-0000-000000000000')
  const a1 = device('inst-a1', 'Android', 'cccccccc-5555-6666-7777-888888888888')
  const s1 = `sess-${uuid()}`
  const sent = [
    {
      type: 's',
      uuid: uuid(),
      ...i1,
      session_uuid: s1,
      at_millis: at(1),
      customer_ids: { customer_id: 'c1' },
    },
    {
      type: 'e',
      uuid: uuid(),
      ...i1,
      session_uuid: s1,
      at_millis: at(2),
      name: 'Purchase ✓',
      attributes: { sku: 'A-1', note: 'tab\there "quoted" 🎉' },
      customer_ids: { customer_id: 'c1' },
    },
    {
      type: 'c',
      uuid: uuid(),
      ...i1,
      session_uuid: s1,
      at_millis: at(9),
      customer_ids: { customer_id: 'c1' },
    },
    {
      type: 's',
      uuid: uuid(),
      ...i2,
      session_uuid: `sess-${uuid()}`,
      at_millis: at(10),
      customer_ids: { customer_id: 'c2' },
    },
    { type: 's', uuid: uuid(), ...i3, session_uuid: `sess-${uuid()}`, at_millis: at(20) },
    {
      type: 's',
      uuid: uuid(),
      ...a1,
      session_uuid: `sess-${uuid()}`,
      at_millis: at(30),
      customer_ids: { customer_id: 'c3' },
    },
  ]
  const nextHour = {
    type: 's',
    uuid: uuid(),
    ...i1,
    session_uuid: `sess-${uuid()}`,
    at_millis: hour + HOUR + 5_000,
  }
  await sdkReceiptDone(sluice, appI, await postSdk(sluice, appI, [...sent, nextHour]))
  // The same event again in another upload: written once.
  await sdkReceiptDone(sluice, appI, await postSdk(sluice, appI, [sent[1]]))

  // ---- Profiles: org level (c1, c2, c9 without a device) and app level (c1 of appI).
  const patch = async (path: string, attributes: Json) => {
    const res = await documentedFetch(`${sluice.url}${path}`, {
      method: 'PATCH',
      headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ attributes }),
    })
    expect(res.status).toBe(202)
  }
  const applied = (path: string, check: (body: Json) => boolean) =>
    waitFor(
      async () => {
        const res = await documentedFetch(`${sluice.url}${path}`, { headers: { Authorization: tenant.auth } })
        return res.status === 200 ? ((await res.json()) as Json) : undefined
      },
      (b) => b !== undefined && check(b),
      { what: `profile ${path}`, timeoutMs: 30_000 },
    )
  await patch('/v1/profiles/c1', { $email: 'c1@example.com', plan: 'gold', visits: 3, tags: ['a', 'b'] })
  await patch('/v1/profiles/c2', { $email: 'C2@Example.com' })
  await patch('/v1/profiles/c9', { x: 'y', renewal: '2026-12-31' })
  await patch(`/v1/apps/${appI}/profiles/c1`, { level: 7 })
  await applied('/v1/profiles/c9', (b) => (b.attributes as Json).x === 'y')
  await applied('/v1/profiles/c2', (b) => (b.attributes as Json).$email === 'C2@Example.com')
  await applied('/v1/profiles/c1', (b) => (b.attributes as Json).plan === 'gold')
  await applied(`/v1/apps/${appI}/profiles/c1`, (b) => (b.attributes as Json).level === 7)

  const y = new Date(hour).getUTCFullYear()
  const mo = new Date(hour).getUTCMonth() + 1
  const d = new Date(hour).getUTCDate()
  const h = new Date(hour).getUTCHours()
  const logPath = `/v1/exports/analytics/logs/${appI}/${y}/${mo}/${d}/${h}`
  const pad = (n: number) => String(n).padStart(2, '0')

  // ---- Not enabled yet: 404. Credentials: 401 without, 403 without the scope.
  expect((await api(logPath)).status).toBe(404)
  expect((await api(logPath, '')).status).toBe(401)
  const noScope = await sluice.admin<{ api_key: string; api_secret: string }>(
    'POST',
    `/orgs/${tenant.orgId}/keys`,
    {
      scopes: ['profiles'],
    },
  )
  const noScopeAuth = `Basic ${Buffer.from(`${noScope.api_key}:${noScope.api_secret}`).toString('base64')}`
  expect((await api(logPath, noScopeAuth)).status).toBe(403)

  // ---- Enabling through the CLI (log and org profile exports) and the admin API.
  const logJobs = (await cli(
    'exports',
    'enable',
    '--org',
    String(tenant.orgId),
    '--source-type',
    'logs',
    '--source-id',
    appI,
  )) as { id: number; state: string; job_type: string }[]
  expect(logJobs).toEqual([expect.objectContaining({ job_type: 'logs', state: 'available' })])
  const profileJobs = (await cli(
    'exports',
    'enable',
    '--org',
    String(tenant.orgId),
    '--source-type',
    'profiles',
    '--source-id',
    String(orgDb),
  )) as { id: number; job_type: string }[]
  expect(profileJobs.map((j) => j.job_type)).toEqual(['profile', 'profile_changes'])
  const appIJobs = await sluice.admin<{ id: number; job_type: string }[]>(
    'POST',
    `/orgs/${tenant.orgId}/exports`,
    {
      source_type: 'profiles',
      source_id: appIDb,
      job_types: ['profile'],
    },
  )
  // The cap (2 profile exports in this test) counts profile dbs: a third is refused.
  const third = await documentedFetch(`${sluice.url}/admin/v1/orgs/${tenant.orgId}/exports`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ source_type: 'profiles', source_id: appBDb }),
  })
  expect(third.status).toBe(409)
  expect(((await third.json()) as { error: string }).error).toMatch(/2 profiles exports enabled/)
  // Another org's profile db cannot be enabled here.
  const foreign = await documentedFetch(`${sluice.url}/admin/v1/orgs/${tenant.orgId}/exports`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ source_type: 'profiles', source_id: otherDb }),
  })
  expect(foreign.status).toBe(404)

  // ---- The hourly log file: every row of the hour, once, with every field sent.
  const log = await follow(logPath)
  expect(log.res.headers.get('content-type')).toBe('application/gzip')
  expect(log.res.headers.get('content-encoding')).toBeNull()
  const logRows = jsonLines(gunzipSync(log.body).toString('utf8'))
  expect(logRows).toHaveLength(sent.length)
  for (const row of sent) {
    const got = logRows.find((r) => r.uuid === row.uuid)
    expect(got, `row ${row.uuid}`).toBeDefined()
    const { customer_ids, ...fields } = row as Json & { customer_ids?: Json }
    expect(got).toMatchObject(fields)
    expect(got!.customer_ids).toEqual(customer_ids ?? {})
    expect(got!.app).toBe(appI)
    expect(got!.at).toBe(new Date(row.at_millis).toISOString().slice(0, 19) + 'Z')
    expect(got).not.toHaveProperty('customer_id')
  }
  // Fields the SDK did not send are there with their defaults.
  expect(logRows.find((r) => r.uuid === sent[4]!.uuid)).toMatchObject({
    customer_ids: {},
    carrier: '',
    nth: 0,
  })
  // Leading zeros or not, the same hour.
  const padded = await follow(`/v1/exports/analytics/logs/${appI}/${y}/${pad(mo)}/${pad(d)}/${pad(h)}`)
  expect(gunzipSync(padded.body).equals(gunzipSync(log.body))).toBe(true)
  // A late row of that hour (an offline device) makes the file stale: the next request has it.
  const late = {
    type: 'e',
    uuid: uuid(),
    ...a1,
    at_millis: at(45),
    name: 'Late',
    customer_ids: { customer_id: 'c3' },
  }
  await sdkReceiptDone(sluice, appI, await postSdk(sluice, appI, [late]))
  const again = jsonLines(gunzipSync((await follow(logPath)).body).toString('utf8'))
  expect(again.map((r) => r.uuid).sort()).toEqual([...sent, late].map((r) => r.uuid).sort())
  // The current hour is not complete; a bad date, an unknown app: 404; another org's app: 403.
  const now = new Date()
  const current = `/v1/exports/analytics/logs/${appI}/${now.getUTCFullYear()}/${now.getUTCMonth() + 1}/${now.getUTCDate()}/${now.getUTCHours()}`
  const notYet = await api(current)
  expect(notYet.status).toBe(404)
  expect(notYet.text).toMatch(/not complete/)
  expect(Number(notYet.headers.get('retry-after'))).toBeGreaterThan(0)
  expect((await api(`/v1/exports/analytics/logs/${appI}/${y}/13/1/0`)).status).toBe(404)
  expect((await api(`/v1/exports/analytics/logs/${appI}/2023/2/29/0`)).status).toBe(404)
  expect((await api(`/v1/exports/analytics/logs/${appI}/${y}/${mo}/${d}/24`)).status).toBe(404)
  expect((await api(`/v1/exports/analytics/logs/no-such-app/${y}/${mo}/${d}/${h}`)).status).toBe(404)
  expect((await api(logPath, other.auth)).status).toBe(403)
  expect((await api(`/v1/exports/analytics/logs/${appB}/${y}/${mo}/${d}/${h}`)).status).toBe(404)

  // ---- Signed links: tampered, traversal, credentials along (as Python requests sends them).
  const link = log.location
  const tampered = link.replace(/sig=([0-9a-f])/, (_, c: string) => `sig=${c === '0' ? '1' : '0'}`)
  expect((await get(`${sluice.url}${tampered}`)).status).toBe(403)
  expect((await get(`${sluice.url}${link.replace(/expires=\d+/, 'expires=9999999999')}`)).status).toBe(403)
  const query = link.slice(link.indexOf('?'))
  for (const path of [
    `/files/exports/../admin-token${query}`,
    `/files/exports/%2e%2e/admin-token${query}`,
    `/files/exports/%2e%2e%2fadmin-token${query}`,
    `/files/exports/..%2f..%2fadmin-token${query}`,
    `/files//etc/passwd${query}`,
    `/files/exports//etc/passwd${query}`,
  ]) {
    const res = await raw(sluice.url, path)
    expect([403, 404], path).toContain(res.status)
    expect(res.body.toString()).not.toMatch(ADMIN_TOKEN)
  }
  const withAuth = await get(`${sluice.url}${link}`, tenant.auth)
  expect(withAuth.status).toBe(200)

  // ---- Profile exports: the full set, as attribute → value rows.
  const profiles = await follow(`/v1/exports/profiles/${orgDb}/profile`)
  expect(profiles.res.headers.get('content-type')).toMatch(/application\/x-ndjson/)
  const orgRows = byKey(jsonLines(profiles.body.toString('utf8')), '_ll.raw_customer_id')
  expect(orgRows.map((r) => r['_ll.raw_customer_id'])).toEqual(['c1', 'c2', 'c3', 'c9'])
  expect(orgRows[0]).toMatchObject({
    $email: 'c1@example.com',
    plan: 'gold',
    visits: 3,
    tags: ['a', 'b'],
    '_ll.country': 'fr',
    '_ll.language': 'fr',
    '_ll.app_version': '3.2.1',
    '_ll.push_enabled': true,
  })
  expect(orgRows[0]).not.toHaveProperty('level')
  expect(orgRows[1]).toMatchObject({ $email: 'C2@Example.com', '_ll.os_version': '17.4' })
  // c3: seen by the SDK only (an auto-profile); c9: no device, so no _ll. attributes but the id.
  expect(Object.keys(orgRows[2]!).every((k) => k.startsWith('_ll.'))).toBe(true)
  expect(orgRows[3]).toEqual({ '_ll.raw_customer_id': 'c9', x: 'y', renewal: '2026-12-31' })
  // Without Accept-Encoding the same rows come inflated; with it, gzip-encoded.
  const plain = await raw(sluice.url, profiles.location)
  expect(plain.headers['content-encoding']).toBeUndefined()
  expect(plain.body.toString('utf8')).toBe(profiles.body.toString('utf8'))
  const zipped = await raw(sluice.url, profiles.location, { 'Accept-Encoding': 'gzip' })
  expect(zipped.headers['content-encoding']).toBe('gzip')
  expect(gunzipSync(zipped.body).toString('utf8')).toBe(profiles.body.toString('utf8'))

  const appRows = byKey(
    jsonLines((await follow(`/v1/exports/profiles/${appIDb}/profile`)).body.toString()),
    '_ll.raw_customer_id',
  )
  expect(appRows.map((r) => r['_ll.raw_customer_id'])).toEqual(['c1', 'c2', 'c3'])
  expect(appRows[0]).toMatchObject({ level: 7, '_ll.country': 'fr' })
  expect(appRows[0]).not.toHaveProperty('plan')
  // Another org's profile db: 403; unknown: 404; a job type not enabled or unknown: 404.
  expect((await api(`/v1/exports/profiles/${otherDb}/profile`)).status).toBe(403)
  expect((await api(`/v1/exports/profiles/999999/profile`)).status).toBe(404)
  expect((await api(`/v1/exports/profiles/${appIDb}/profile_changes`)).status).toBe(404)
  expect((await api(`/v1/exports/profiles/${orgDb}/idfa`)).status).toBe(404)
  expect((await api(`/v1/exports/profile/${orgDb}/profile`)).status).toBe(404)

  // ---- profile_changes: every change since the last fetched file; the cursor moves on a fetch.
  const changesPath = `/v1/exports/profiles/${orgDb}/profile_changes`
  const changes1 = jsonLines((await follow(changesPath)).body.toString())
  const changeOf = (rows: Json[], customer: string) =>
    rows.filter((r) => (r.profile as Json)['_ll.raw_customer_id'] === customer)
  expect(changes1).toHaveLength(3)
  expect(changeOf(changes1, 'c1')).toEqual([
    {
      profile: { '_ll.raw_customer_id': 'c1', profiledb_id: orgDb },
      updates: { $email: 'c1@example.com', plan: 'gold', visits: 3, tags: ['a', 'b'] },
    },
  ])
  expect(changeOf(changes1, 'c9')).toEqual([
    {
      profile: { '_ll.raw_customer_id': 'c9', profiledb_id: orgDb },
      updates: { x: 'y', renewal: '2026-12-31' },
    },
  ])
  await patch('/v1/profiles/c1', { plan: 'platinum', visits: null })
  const del = await documentedFetch(`${sluice.url}/v1/profiles/c9`, {
    method: 'DELETE',
    headers: { Authorization: tenant.auth },
  })
  expect(del.status).toBe(204)
  await applied('/v1/profiles/c1', (b) => (b.attributes as Json).plan === 'platinum')
  await waitFor(
    () => api('/v1/profiles/c9'),
    (r) => r.status === 404,
    { what: 'c9 deleted', timeoutMs: 30_000 },
  )
  // Requested but not fetched: the cursor stays, so the next request repeats these changes.
  const notFetched = await api(changesPath)
  expect(notFetched.status).toBe(302)
  // A HEAD of the link sends no body: it moves nothing either.
  const head = await documentedFetch(`${sluice.url}${notFetched.headers.get('location')!}`, {
    method: 'HEAD',
  })
  expect(head.status).toBe(200)
  expect(head.headers.get('content-type')).toMatch(/application\/x-ndjson/)
  const changes2 = jsonLines((await follow(changesPath)).body.toString()).map((row) =>
    row.deletes
      ? { ...row, deletes: { attributes: [...((row.deletes as Json).attributes as string[])].sort() } }
      : row,
  )
  expect(changes2).toEqual([
    {
      profile: { '_ll.raw_customer_id': 'c1', profiledb_id: orgDb },
      updates: { plan: 'platinum' },
      deletes: { attributes: ['visits'] },
    },
    {
      profile: { '_ll.raw_customer_id': 'c9', profiledb_id: orgDb },
      deletes: { attributes: ['renewal', 'x'] },
    },
  ])
  // Fetched: nothing new since.
  expect(jsonLines((await follow(changesPath)).body.toString())).toEqual([])

  // ---- Audience exports.
  const audience = await documentedFetch(`${sluice.url}/api/v6/orgs/${tenant.orgId}/apps/${appI}/audiences`, {
    method: 'POST',
    headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      name: 'Recent users',
      target_rules: {
        behavior_profile_operator: 'and',
        targeting_type: 'install_id',
        behavior: {
          days: 30,
          behavior_rule_operator: 'and',
          rules: [{ rule_type: 'session', count: 1, count_operator: 'at_least' }],
        },
      },
    }),
  })
  expect(audience.status).toBe(201)
  const audienceId = ((await audience.json()) as { id: number }).id
  const audPath = (type: string) => `/v1/exports/audiences/${audienceId}/${type}`
  expect((await api(audPath('idfa'))).status).toBe(404)
  const audJobs = await sluice.admin<{ id: number; job_type: string; name: string }[]>(
    'POST',
    `/orgs/${tenant.orgId}/exports`,
    { source_type: 'audiences', source_id: audienceId },
  )
  expect(audJobs.map((j) => j.job_type)).toEqual(['idfa', 'gaid', 'email', 'customer_id'])
  const audienceRows = async (type: string) => jsonLines((await follow(audPath(type))).body.toString())
  expect(await audienceRows('idfa')).toEqual([{ IDFA: i1.advertising_id }])
  expect(await audienceRows('gaid')).toEqual([{ GAID: a1.advertising_id }])
  expect(byKey(await audienceRows('customer_id'), 'CUSTOMER_ID')).toEqual([
    { CUSTOMER_ID: 'c1' },
    { CUSTOMER_ID: 'c2' },
    { CUSTOMER_ID: 'c3' },
  ])
  expect(byKey(await audienceRows('email'), 'EMAIL')).toEqual([
    { EMAIL: 'C2@Example.com' },
    { EMAIL: 'c1@example.com' },
  ])
  expect((await api(audPath('idfa'), other.auth)).status).toBe(403)
  expect((await api(audPath('imei'))).status).toBe(404)
  expect((await api('/v1/exports/audiences/999999/idfa')).status).toBe(404)

  // ---- The lists: every field of the spec, plus name and size.
  const list = JSON.parse((await api('/v1/exports/audiences')).text) as Json[]
  expect(list).toHaveLength(4)
  const idfaItem = list.find((i) => i.job_type === 'idfa')!
  expect(idfaItem).toMatchObject({
    id: audJobs[0]!.id,
    name: 'Recent users',
    source_type: 'audiences',
    source_id: String(audienceId),
    results_count: 1,
  })
  expect(Object.keys(idfaItem).sort()).toEqual([
    'id',
    'job_type',
    'last_requested_at',
    'name',
    'results_count',
    'results_expire_at',
    'results_generated_at',
    'size',
    'source_id',
    'source_type',
  ])
  expect(idfaItem.size).toBeGreaterThan(0)
  const profileList = JSON.parse((await api('/v1/exports/profiles')).text) as Json[]
  expect(profileList.map((i) => [i.source_id, i.job_type, i.source_type])).toEqual([
    [String(orgDb), 'profile', 'profile'],
    [String(orgDb), 'profile_changes', 'profile'],
    [String(appIDb), 'profile', 'profile'],
  ])
  expect(profileList[0]).toMatchObject({ results_count: 4 })
  expect((JSON.parse((await api('/v1/exports/profiles', other.auth)).text) as Json[]).length).toBe(0)

  // ---- Disabled: 404 and out of the list; enabled again: the same export, available.
  await sluice.admin('DELETE', `/orgs/${tenant.orgId}/exports/${appIJobs[0]!.id}`).catch(() => undefined)
  expect((await api(`/v1/exports/profiles/${appIDb}/profile`)).status).toBe(404)
  expect((JSON.parse((await api('/v1/exports/profiles')).text) as Json[]).length).toBe(2)
  const again2 = await sluice.admin<{ id: number; state: string }[]>(
    'POST',
    `/orgs/${tenant.orgId}/exports`,
    {
      source_type: 'profiles',
      source_id: String(appIDb),
      job_types: ['profile'],
    },
  )
  expect(again2).toEqual([expect.objectContaining({ id: appIJobs[0]!.id, state: 'available' })])
  expect((await api(`/v1/exports/profiles/${appIDb}/profile`)).status).toBe(302)

  // ---- The daily refresh writes each available export once per refresh, however often run.
  const runtime = sluice.running.runtime
  const refresh = exportRefreshJob({
    bus: runtime.bus,
    topic: runtime.topology.topics.exports.topic,
    refreshTime: { hour: 8, minute: 0, zone: 'America/New_York' },
    idleMs: 45 * 24 * HOUR,
    logGraceMs: 0,
  })
  // When the audience's file was last written (the latest version of its row).
  const writtenAt = async (id: number) =>
    Number(
      (
        await store.query<{ at: number | string }>(
          'SELECT toUnixTimestamp64Milli(max(generated_at)) AS at FROM export_files WHERE export_id = {id:UInt64}',
          { id },
        )
      )[0]?.at,
    )
  const periodStart = Date.now() + 1000
  await new Promise((r) => setTimeout(r, 1100))
  expect(await refresh.run({ store, periodStart })).toMatchObject({ enqueued: 7 })
  const daily = await waitFor(
    () => writtenAt(audJobs[0]!.id),
    (at) => at >= periodStart,
    { what: 'the daily file', timeoutMs: 30_000 },
  )
  // The same refresh again (a second scheduler, a restart): nothing is written twice.
  await refresh.run({ store, periodStart })
  await new Promise((r) => setTimeout(r, 3000))
  expect(await writtenAt(audJobs[0]!.id)).toBe(daily)

  // ---- The audience deleted: its exports become unavailable (404, out of the list).
  const deleted = await documentedFetch(
    `${sluice.url}/api/v6/orgs/${tenant.orgId}/apps/${appI}/audiences/${audienceId}`,
    {
      method: 'DELETE',
      headers: { Authorization: tenant.auth },
    },
  )
  expect(deleted.status).toBe(204)
  const gone = await api(audPath('customer_id'))
  expect(gone.status).toBe(404)
  expect(gone.text).toMatch(/unavailable/)
  expect(JSON.parse((await api('/v1/exports/audiences')).text)).toEqual([])
  const states = await sluice.admin<{ id: number; state: string }[]>('GET', `/orgs/${tenant.orgId}/exports`)
  expect(states.filter((j) => audJobs.some((a) => a.id === j.id)).map((j) => j.state)).toEqual([
    'unavailable',
    'unavailable',
    'unavailable',
    'unavailable',
  ])

  // ---- 429 past the per-key rate (60 per minute here), on a key of its own.
  const busy = await sluice.admin<{ api_key: string; api_secret: string }>(
    'POST',
    `/orgs/${tenant.orgId}/keys`,
    {},
  )
  const busyAuth = `Basic ${Buffer.from(`${busy.api_key}:${busy.api_secret}`).toString('base64')}`
  const statuses = await Promise.all(Array.from({ length: 65 }, () => api('/v1/exports/profiles', busyAuth)))
  expect(statuses.filter((s) => s.status === 429).length).toBeGreaterThan(0)
  expect(statuses.filter((s) => s.status === 200).length).toBeLessThanOrEqual(60)

  // ---- Credentials in the URL's user information (as curl and clients send them).
  const userinfo = await new Promise<number>((resolve, reject) => {
    const url = new URL(`${sluice.url}/v1/exports/profiles`)
    const [user = '', pass = ''] = Buffer.from(tenant.auth.slice(6), 'base64').toString().split(':')
    url.username = user
    url.password = pass
    httpRequest(url, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
      .on('error', reject)
      .end()
  })
  expect(userinfo).toBe(200)
}
