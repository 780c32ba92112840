import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { postSdk, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/**
 * The profile store contract, run the same way in both modes. Needs the per-customer limit raised
 * (SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN) for the 100 parallel increments.
 */

interface Client {
  req(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: unknown; headers: Headers }>
  /** Poll a GET until its body satisfies `done` (writes are applied asynchronously after the 202). */
  until(path: string, done: (r: { status: number; body: unknown }) => boolean, what: string): Promise<unknown>
}

function client(sluice: InProcessSluice, auth: string): Client {
  const req: Client['req'] = async (method, path, body) => {
    const res = await documentedFetch(`${sluice.url}${path}`, {
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return {
      status: res.status,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
      headers: res.headers,
    }
  }
  return {
    req,
    async until(path, done, what) {
      const r = await waitFor(() => req('GET', path), done, { what, timeoutMs: 30_000 })
      return r.body
    },
  }
}

const attributesOf = (body: unknown) => (body as { attributes?: unknown } | undefined)?.attributes

export async function runProfileScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appX = `px-${suffix}`
  const appY = `py-${suffix}`
  const tenant = await sluice.tenant(`profiles-${suffix}`, [appX, appY])
  const other = await sluice.tenant(`profiles-other-${suffix}`, [`pz-${suffix}`])
  const api = client(sluice, tenant.auth)
  const otherApi = client(sluice, other.auth)

  // Absent profile.
  expect(await api.req('GET', '/v1/profiles/ann')).toMatchObject({
    status: 404,
    body: { error: 'profile not found', errors: ['profile not found'] },
  })

  // Attributes syntax: every type, some items invalid.
  const first = await api.req('PATCH', '/v1/profiles/ann', {
    attributes: {
      ' name ': '  Ann Lee ',
      age: 41.9,
      joined: '2021-03-04T05:06:07Z',
      tags: ['vip', 'beta', 'vip'],
      codes: [3, 1, 3],
      mixed: [1, 'one', 1],
      score: 10,
      $email: 'Ann@Example.COM',
      $first_name: 'Ann',
      _private: 'x',
      flag: true,
      blank: '  ',
      long: 'x'.repeat(256),
      [`k${'e'.repeat(128)}`]: 1,
      $nick: 'annie',
    },
  })
  expect(first).toMatchObject({
    status: 202,
    body: {
      ignored_changes: [
        { index: 9, attr: '_private', op: 'assign', reason: "attribute key must not begin with '_'" },
        {
          index: 10,
          attr: 'flag',
          op: 'assign',
          reason: 'a value must be a string, an integer, an ISO 8601 date or an array, not a boolean',
        },
        { index: 11, attr: 'blank', op: 'assign', reason: 'string value is empty' },
        { index: 12, attr: 'long', op: 'assign', reason: 'string value is longer than 255 characters' },
        {
          index: 13,
          attr: `k${'e'.repeat(128)}`,
          op: 'assign',
          reason: 'attribute key is longer than 128 characters',
        },
        { index: 14, attr: '$nick', op: 'assign', reason: "attribute key must not begin with '$'" },
      ],
    },
  })
  const annV1 = {
    name: 'Ann Lee',
    age: 41,
    joined: '2021-03-04',
    tags: ['vip', 'beta'],
    codes: [3, 1],
    mixed: ['1', 'one'],
    score: 10,
    $email: 'Ann@Example.COM',
    $first_name: 'Ann',
  }
  expect(await api.until('/v1/profiles/ann', (r) => r.status === 200, 'ann created')).toEqual({
    attributes: annV1,
    vendor: { attributes: {} },
  })

  // Changes syntax, in order; only the named attributes change.
  const second = await api.req('PATCH', '/v1/profiles/ann', {
    changes: [
      { op: 'increment', attr: 'score', value: 5 },
      { op: 'increment', attr: 'score', value: -2.9 },
      { op: 'set-add', attr: 'tags', value: ['gold', 'beta'] },
      { op: 'set-remove', attr: 'tags', value: 'vip' },
      { op: 'set-add', attr: 'codes', value: 'x' },
      { op: 'delete', attr: 'mixed' },
      { op: 'assign', attr: 'renewal', value: '2025-12-31' },
      { op: 'increment', attr: 'visits', value: 1 },
      { op: 'increment', attr: 'name', value: 1 },
      { op: 'multiply', attr: 'score', value: 2 },
      { op: 'increment', attr: 'score', value: 'ten' },
      { op: 'assign', attr: '$email', value: 'not-an-address' },
    ],
  })
  expect(second).toMatchObject({
    status: 202,
    body: {
      ignored_changes: [
        {
          index: 9,
          attr: 'score',
          op: 'multiply',
          reason: 'op must be one of delete, assign, increment, set-add, set-remove',
        },
        {
          index: 10,
          attr: 'score',
          op: 'increment',
          reason: 'increment value must be an integer, not a string',
        },
        { index: 11, attr: '$email', op: 'assign', reason: '$email must be a valid e-mail address' },
      ],
    },
  })
  const annV2 = {
    name: 'Ann Lee', // increment of a string is refused when applied, the rest of the request applies
    age: 41,
    joined: '2021-03-04',
    tags: ['beta', 'gold'],
    codes: ['3', '1', 'x'],
    score: 13,
    $email: 'Ann@Example.COM',
    $first_name: 'Ann',
    renewal: '2025-12-31',
    visits: 1,
  }
  expect(
    attributesOf(
      await api.until(
        '/v1/profiles/ann',
        (r) => attributesOf(r.body) !== undefined && 'visits' in (attributesOf(r.body) as object),
        'ann changed',
      ),
    ),
  ).toEqual(annV2)

  // Nothing valid: 400 listing every ignored item; both syntaxes at once: 400.
  expect(await api.req('PATCH', '/v1/profiles/ann', { attributes: { '#a': 1, b: {} } })).toMatchObject({
    status: 400,
    body: {
      error: 'no valid assignment or change',
      errors: ['no valid assignment or change'],
      ignored_changes: [
        { index: 0, attr: '#a', op: 'assign', reason: "attribute key must not begin with '#'" },
        {
          index: 1,
          attr: 'b',
          op: 'assign',
          reason: 'a value must be a string, an integer, an ISO 8601 date or an array, not an object',
        },
      ],
    },
  })
  expect(await api.req('POST', '/v1/profiles/ann', { attributes: { a: 1 }, changes: [] })).toMatchObject({
    status: 400,
  })

  // Null deletes in the attributes syntax; POST is PATCH.
  expect(
    (await api.req('POST', '/v1/profiles/ann', { attributes: { age: null, visits: null } })).status,
  ).toBe(202)
  const { age: _age, visits: _visits, ...annV3 } = annV2
  await api.until(
    '/v1/profiles/ann',
    (r) => JSON.stringify(attributesOf(r.body)) === JSON.stringify(annV3),
    'ann keys deleted',
  )

  // App level: isolated from the org level and from other apps; special ids refused there.
  expect(
    await api.req('PATCH', `/v1/apps/${appX}/profiles/ann`, {
      attributes: { level: 7, name: 'ann-in-x', $email: 'a@b.co' },
    }),
  ).toMatchObject({
    status: 202,
    body: {
      ignored_changes: [
        {
          index: 2,
          attr: '$email',
          op: 'assign',
          reason: '$email can only be set on the org-level profile (/v1/profiles/:customer_id)',
        },
      ],
    },
  })
  expect(await api.until(`/v1/apps/${appX}/profiles/ann`, (r) => r.status === 200, 'app profile')).toEqual({
    attributes: { level: 7, name: 'ann-in-x' },
    vendor: { attributes: {} },
  })
  expect(await api.req('GET', `/v1/apps/${appY}/profiles/ann`)).toMatchObject({ status: 404 })
  expect(attributesOf((await api.req('GET', '/v1/profiles/ann')).body)).toEqual(annV3)

  // Another org: its key cannot reach this org's apps, and its own profile of "ann" is a different one.
  expect(await otherApi.req('GET', `/v1/apps/${appX}/profiles/ann`)).toEqual({
    status: 403,
    body: {
      error: `app ${appX} does not belong to this organization`,
      errors: [`app ${appX} does not belong to this organization`],
    },
    headers: expect.anything() as Headers,
  })
  expect(
    (await otherApi.req('PATCH', `/v1/apps/${appX}/profiles/ann`, { attributes: { a: 1 } })).status,
  ).toBe(403)
  expect((await otherApi.req('GET', '/v1/profiles/ann')).status).toBe(404)
  expect((await otherApi.req('GET', '/v1/customers/ann')).status).toBe(404)
  expect(await otherApi.req('GET', '/v1/customers?email=ann@example.com')).toMatchObject({
    status: 200,
    body: { customers: [] },
  })

  // The SDK has seen ann in app X: the auto-profile.
  const now = Date.now()
  const sdkTx = await postSdk(sluice, appX, [
    sessionRow({
      install: `i-ann-${suffix}`,
      customer: 'ann',
      at: now - 2 * 86_400_000,
      country: 'fr',
      model: 'iPhone15,2',
    }),
    sessionRow({
      install: `i-ann-${suffix}`,
      customer: 'ann',
      at: now - 3_600_000,
      country: 'de',
      model: 'iPhone15,2',
      app_ver: '2.2.0',
      language: 'de',
    }),
  ])
  await sdkReceiptDone(sluice, appX, sdkTx)
  const vendor = {
    app_version: '2.2.0',
    os_version: '17.1',
    total_sessions: 2,
    birthdate: new Date(now - 2 * 86_400_000).toISOString().slice(0, 10),
    last_session_date: new Date(now - 3_600_000).toISOString().slice(0, 10),
    seconds_since_last_session: expect.any(Number) as number,
    push_enabled: true,
    country: 'de',
    device_timezone: 'Europe/Paris',
    language: 'de',
  }
  const appProfile = (await api.until(
    `/v1/apps/${appX}/profiles/ann`,
    (r) => 'country' in (r.body as { vendor: { attributes: object } }).vendor.attributes,
    'auto-profile',
  )) as {
    vendor: { attributes: { seconds_since_last_session: number } }
  }
  expect(appProfile).toEqual({ attributes: { level: 7, name: 'ann-in-x' }, vendor: { attributes: vendor } })
  expect(appProfile.vendor.attributes.seconds_since_last_session).toBeGreaterThanOrEqual(3599)
  expect(appProfile.vendor.attributes.seconds_since_last_session).toBeLessThan(3700)

  // The customer: org-level profile first, then the app-scoped ones with app_id.
  expect((await api.req('GET', '/v1/customers/ann')).body).toEqual({
    id: 'ann',
    profiles: [
      { attributes: annV3, vendor: { attributes: vendor } },
      { attributes: { level: 7, name: 'ann-in-x' }, vendor: { attributes: vendor }, app_id: appX },
    ],
  })

  // E-mail lookup: case-insensitive, every customer of the org with that $email, app profiles as listed.
  expect(
    (await api.req('PATCH', '/v1/profiles/ann-2', { attributes: { $email: 'ANN@example.com', n: 1 } }))
      .status,
  ).toBe(202)
  expect(
    (await api.req('PATCH', `/v1/apps/${appY}/profiles/ann-2`, { attributes: { y: 'yes' } })).status,
  ).toBe(202)
  expect(
    (await api.req('PATCH', '/v1/profiles/bob', { attributes: { $email: 'bob@example.com' } })).status,
  ).toBe(202)
  expect(
    (await otherApi.req('PATCH', '/v1/profiles/ann-3', { attributes: { $email: 'ann@example.com' } })).status,
  ).toBe(202)
  await api.until(`/v1/apps/${appY}/profiles/ann-2`, (r) => r.status === 200, 'ann-2 app profile')
  await otherApi.until('/v1/profiles/ann-3', (r) => r.status === 200, 'other org profile')
  const lookup = await api.until(
    `/v1/customers?email=${encodeURIComponent(' ann@EXAMPLE.com ')}&app_ids=${appX},${appY}`,
    (r) => (r.body as { customers: unknown[] }).customers.length === 2,
    'e-mail lookup',
  )
  expect(lookup).toEqual({
    customers: [
      {
        id: 'ann',
        profiles: [
          { attributes: annV3, vendor: { attributes: vendor } },
          { attributes: { level: 7, name: 'ann-in-x' }, vendor: { attributes: vendor }, app_id: appX },
        ],
      },
      {
        id: 'ann-2',
        profiles: [
          { attributes: { $email: 'ANN@example.com', n: 1 }, vendor: { attributes: {} } },
          { attributes: { y: 'yes' }, vendor: { attributes: {} }, app_id: appY },
        ],
      },
    ],
  })
  expect((await api.req('GET', '/v1/customers?email=ann@example.com')).body).toEqual({
    customers: [
      { id: 'ann', profiles: [{ attributes: annV3, vendor: { attributes: vendor } }] },
      {
        id: 'ann-2',
        profiles: [{ attributes: { $email: 'ANN@example.com', n: 1 }, vendor: { attributes: {} } }],
      },
    ],
  })
  // Changing the address moves the customer out of the old address's results.
  expect(
    (
      await api.req('PATCH', '/v1/profiles/ann-2', {
        changes: [{ op: 'assign', attr: '$email', value: 'new@example.com' }],
      })
    ).status,
  ).toBe(202)
  await api.until(
    '/v1/customers?email=ann@example.com',
    (r) => (r.body as { customers: unknown[] }).customers.length === 1,
    'moved address',
  )
  expect(await api.req('GET', '/v1/customers?email=NEW@example.com')).toMatchObject({
    body: { customers: [{ id: 'ann-2' }] },
  })

  // Delete: 204, then gone; deleting what does not exist is 204 as well.
  expect(await api.req('DELETE', `/v1/apps/${appX}/profiles/ann`)).toMatchObject({
    status: 204,
    body: undefined,
  })
  await api.until(`/v1/apps/${appX}/profiles/ann`, (r) => r.status === 404, 'app profile deleted')
  expect(attributesOf((await api.req('GET', '/v1/profiles/ann')).body)).toEqual(annV3)
  expect((await api.req('DELETE', '/v1/profiles/nobody')).status).toBe(204)
  expect((await api.req('DELETE', '/v1/profiles/bob')).status).toBe(204)
  await api.until('/v1/profiles/bob', (r) => r.status === 404, 'bob deleted')
  // A new PATCH after a delete starts a new, empty profile.
  expect(
    (await api.req('PATCH', '/v1/profiles/bob', { changes: [{ op: 'increment', attr: 'n', value: 2 }] }))
      .status,
  ).toBe(202)
  expect(attributesOf(await api.until('/v1/profiles/bob', (r) => r.status === 200, 'bob again'))).toEqual({
    n: 2,
  })

  // Read-your-writes: a read right after the 202 (no polling) shows the write.
  expect(
    (await api.req('PATCH', '/v1/profiles/ryw', { attributes: { $email: 'ryw@example.com', n: 1 } })).status,
  ).toBe(202)
  expect(await api.req('GET', '/v1/profiles/ryw')).toMatchObject({
    status: 200,
    body: { attributes: { $email: 'ryw@example.com', n: 1 } },
  })
  expect(
    (await api.req('PATCH', '/v1/profiles/ryw', { changes: [{ op: 'increment', attr: 'n', value: 4 }] }))
      .status,
  ).toBe(202)
  expect(await api.req('GET', '/v1/customers/ryw')).toMatchObject({
    status: 200,
    body: { profiles: [{ attributes: { n: 5 } }] },
  })
  expect((await api.req('PATCH', `/v1/apps/${appY}/profiles/ryw`, { attributes: { y: 1 } })).status).toBe(202)
  expect(await api.req('GET', `/v1/customers?email=RYW@example.com&app_ids=${appY}`)).toMatchObject({
    status: 200,
    body: {
      customers: [
        { id: 'ryw', profiles: [{ attributes: { n: 5 } }, { attributes: { y: 1 }, app_id: appY }] },
      ],
    },
  })
  expect((await api.req('DELETE', '/v1/profiles/ryw')).status).toBe(204)
  expect(await api.req('GET', '/v1/profiles/ryw')).toMatchObject({ status: 404 })

  // 100 parallel increments of one attribute end with the exact sum.
  const responses = await Promise.all(
    Array.from({ length: 100 }, (_, i) =>
      api.req('PATCH', '/v1/profiles/counter', {
        changes: [{ op: 'increment', attr: 'hits', value: i + 1 }],
      }),
    ),
  )
  expect(responses.map((r) => r.status)).toEqual(Array.from({ length: 100 }, () => 202))
  const counter = await api.until(
    '/v1/profiles/counter',
    (r) => r.status === 200 && (attributesOf(r.body) as { hits: number }).hits === 5050,
    'sum of 100 increments',
  )
  expect(attributesOf(counter)).toEqual({ hits: 5050 })

  // A set built by interleaved set-add / set-remove, each request after the previous 202.
  const steps: [string, unknown][] = [
    ['set-add', ['a', 'b', 'c']],
    ['set-remove', ['b']],
    ['set-add', ['d', 'a']],
    ['set-remove', 'c'],
    ['set-add', 'b'],
    ['set-remove', ['zz', 'a']],
    ['set-add', ['e']],
  ]
  for (const [op, value] of steps) {
    expect(
      (await api.req('PATCH', '/v1/profiles/setter', { changes: [{ op, attr: 'letters', value }] })).status,
    ).toBe(202)
  }
  const setter = await api.until(
    '/v1/profiles/setter',
    (r) =>
      r.status === 200 &&
      JSON.stringify(attributesOf(r.body)) === JSON.stringify({ letters: ['d', 'b', 'e'] }),
    'interleaved set',
  )
  expect(attributesOf(setter)).toEqual({ letters: ['d', 'b', 'e'] })

  // The change log and the current profiles, as analysts and the profile_changes export see them.
  const org = await sluice.admin<{ profiledb_id: number }>('GET', `/orgs/${tenant.orgId}`)
  const log = await store.query<{ updates: string; deletes: string[]; profile_deleted: number }>(
    `SELECT updates, deletes, profile_deleted FROM profile_changes FINAL
     WHERE profiledb_id = {db:UInt64} AND customer_id = 'bob' ORDER BY seq`,
    { db: org.profiledb_id },
  )
  expect(log.map((r) => [JSON.parse(r.updates) as unknown, r.deletes, Number(r.profile_deleted)])).toEqual([
    [{ $email: 'bob@example.com' }, [], 0],
    [{}, ['$email'], 1],
    [{ n: 2 }, [], 0],
  ])
  const counterLog = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM profile_changes FINAL WHERE profiledb_id = {db:UInt64} AND customer_id = 'counter'`,
    { db: org.profiledb_id },
  )
  expect(Number(counterLog[0]!.n)).toBe(100)
  const current = await store.query<{ customer_id: string; attributes: string; email: string }>(
    `SELECT customer_id, attributes, email FROM profiles FINAL
     WHERE profiledb_id = {db:UInt64} AND deleted = 0 ORDER BY customer_id`,
    { db: org.profiledb_id },
  )
  expect(current.map((r) => [r.customer_id, r.email])).toEqual([
    ['ann', 'ann@example.com'],
    ['ann-2', 'new@example.com'],
    ['bob', ''],
    ['counter', ''],
    ['setter', ''],
  ])
}
