import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Bus, ProduceMessage } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { ControlStore } from '../../services/control/control-store.ts'
import { createEdgeApp } from '../../services/edge/app.ts'
import { profileRoutes } from '../../services/edge/routes/profiles.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { createMetrics } from '../../services/shared/metrics.ts'
import { directControl } from '../helpers/control.ts'
import { basic } from '../helpers/edge.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * The edge half of the profile store, over a bus that records what is produced: what a request
 * turns into, and every refusal the edge makes before anything reaches the bus.
 */

const TOPIC = 'test.profile-changes'
let produced: { topic: string; message: ProduceMessage }[] = []
let busDown = false
const bus = {
  kind: 'local',
  produce: async (topic: string, messages: ProduceMessage[]) => {
    if (busDown) throw new Error('bus down')
    for (const message of messages) produced.push({ topic, message })
  },
} as unknown as Bus

let store: ChdbStore
let cleanup: () => Promise<void>
let app: ReturnType<typeof createEdgeApp>
let org: { id: number; profiledb_id: number }
let auth: Record<string, string>
let appA: { app_id: string; profiledb_id: number }

async function build(limits: {
  perKeyPerMinute: number
  perCustomerPerMinute: number
  maxBodyBytes?: number
}) {
  const control = new ControlStore(store, 0)
  return createEdgeApp({
    control,
    logger: createLogger('silent'),
    metrics: createMetrics(),
    adminToken: undefined,
    readiness: [],
    isDraining: () => false,
    // No writer runs here: reads wait only briefly for the writes this edge accepted.
    areas: [
      profileRoutes({
        bus,
        store,
        control,
        topic: TOPIC,
        metrics: createMetrics(),
        limits,
        readYourWritesMs: 20,
      }),
    ],
  })
}

beforeAll(async () => {
  const dir = await tempDir('profile-routes')
  store = await ChdbStore.open(dir.path)
  await migrate(store)
  cleanup = async () => {
    await store.close()
    await dir.cleanup()
  }
  const control = directControl(store)
  org = await control.createOrg('routes')
  appA = await control.createApp(org.id, 'a', 'routes-app-a')
  const other = await control.createOrg('other')
  await control.createApp(other.id, 'f', 'routes-foreign')
  const key = await control.createKey(org.id, ['profiles'])
  auth = basic(key.api_key, key.api_secret)
  app = await build({ perKeyPerMinute: 10_000, perCustomerPerMinute: 10_000 })
})
afterAll(() => cleanup())
beforeEach(() => {
  produced = []
  busDown = false
})

const send = (a: typeof app, method: string, path: string, body?: unknown, headers = auth) =>
  a.request(path, {
    method,
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })

const decoded = () =>
  produced.map((p) => ({
    topic: p.topic,
    key: p.message.key,
    value: JSON.parse(p.message.value.toString()) as Record<string, unknown>,
  }))

describe('profile routes: writes', () => {
  it.each(['PATCH', 'POST'])(
    '%s: 202 with ignored_changes, and one record keyed by profile db + customer',
    async (method) => {
      const before = Date.now()
      const res = await send(app, method, '/v1/profiles/cust-1', { attributes: { plan: 'gold', _x: 1 } })
      expect(res.status).toBe(202)
      expect(await res.json()).toEqual({
        ignored_changes: [
          { index: 1, attr: '_x', op: 'assign', reason: "attribute key must not begin with '_'" },
        ],
      })
      const [record] = decoded()
      expect(decoded()).toHaveLength(1)
      expect(record).toEqual({
        topic: TOPIC,
        key: `${org.profiledb_id}:cust-1`,
        value: {
          v: 1,
          op: 'patch',
          org: org.id,
          db: org.profiledb_id,
          app: '',
          customer: 'cust-1',
          receivedAt: expect.any(Number) as number,
          changes: [{ index: 0, op: 'assign', attr: 'plan', value: { type: 'string', value: 'gold' } }],
        },
      })
      expect(record!.value.receivedAt as number).toBeGreaterThanOrEqual(before)
    },
  )

  it('an empty ignored_changes array when every item is valid', async () => {
    const res = await send(app, 'PATCH', '/v1/profiles/cust-1', {
      changes: [{ op: 'increment', attr: 'n', value: 1 }],
    })
    expect(res.status).toBe(202)
    expect(await res.json()).toEqual({ ignored_changes: [] })
  })

  it('app level: the app’s profile db, and the app key in the record', async () => {
    const res = await send(app, 'PATCH', `/v1/apps/${appA.app_id}/profiles/cust-1`, {
      attributes: { level: 3 },
    })
    expect(res.status).toBe(202)
    expect(decoded()[0]).toMatchObject({
      key: `${appA.profiledb_id}:cust-1`,
      value: { db: appA.profiledb_id, app: appA.app_id, customer: 'cust-1' },
    })
  })

  it('percent-encoded customer ids are decoded', async () => {
    const res = await send(app, 'PATCH', '/v1/profiles/a%2Fb%20c', { attributes: { n: 1 } })
    expect(res.status).toBe(202)
    expect(decoded()[0]!.value.customer).toBe('a/b c')
  })

  it('DELETE: 204 and a delete-profile record', async () => {
    const res = await send(app, 'DELETE', '/v1/profiles/cust-1')
    expect(res.status).toBe(204)
    expect(await res.text()).toBe('')
    expect(decoded()).toEqual([
      {
        topic: TOPIC,
        key: `${org.profiledb_id}:cust-1`,
        value: {
          v: 1,
          op: 'delete-profile',
          org: org.id,
          db: org.profiledb_id,
          app: '',
          customer: 'cust-1',
          receivedAt: expect.any(Number) as number,
        },
      },
    ])
  })

  const refusals: [string, string, string, unknown, number, unknown][] = [
    [
      'no valid item',
      'PATCH',
      '/v1/profiles/c',
      { attributes: { '': 1 } },
      400,
      {
        error: 'no valid assignment or change',
        errors: ['no valid assignment or change'],
        ignored_changes: [{ index: 0, attr: '', op: 'assign', reason: 'attribute key is empty' }],
      },
    ],
    [
      'empty changes',
      'PATCH',
      '/v1/profiles/c',
      { changes: [] },
      400,
      {
        error: 'no valid assignment or change',
        errors: ['no valid assignment or change'],
        ignored_changes: [],
      },
    ],
    [
      'both syntaxes',
      'PATCH',
      '/v1/profiles/c',
      { attributes: { a: 1 }, changes: [{ op: 'delete', attr: 'a' }] },
      400,
      {
        error: 'use either "attributes" or "changes" in one request, not both',
        errors: ['use either "attributes" or "changes" in one request, not both'],
      },
    ],
    [
      'neither syntax',
      'POST',
      '/v1/profiles/c',
      {},
      400,
      {
        error: 'request body must have "attributes" (an object) or "changes" (an array)',
        errors: ['request body must have "attributes" (an object) or "changes" (an array)'],
      },
    ],
    [
      'not JSON',
      'PATCH',
      '/v1/profiles/c',
      '{"attributes":',
      400,
      { error: 'request body is not valid JSON', errors: ['request body is not valid JSON'] },
    ],
    [
      'empty body',
      'PATCH',
      '/v1/profiles/c',
      '',
      400,
      { error: 'request body is not valid JSON', errors: ['request body is not valid JSON'] },
    ],
    [
      'customer id too long',
      'PATCH',
      `/v1/profiles/${'c'.repeat(129)}`,
      { attributes: { a: 1 } },
      400,
      {
        error: `invalid customer_id: "${'c'.repeat(129)}"`,
        errors: [`invalid customer_id: "${'c'.repeat(129)}"`],
      },
    ],
    [
      '$email at app level',
      'PATCH',
      '/v1/apps/routes-app-a/profiles/c',
      { attributes: { $email: 'a@b.co' } },
      400,
      {
        error: 'no valid assignment or change',
        errors: ['no valid assignment or change'],
        ignored_changes: [
          {
            index: 0,
            attr: '$email',
            op: 'assign',
            reason: '$email can only be set on the org-level profile (/v1/profiles/:customer_id)',
          },
        ],
      },
    ],
    [
      'another org’s app',
      'PATCH',
      '/v1/apps/routes-foreign/profiles/c',
      { attributes: { a: 1 } },
      403,
      {
        error: 'app routes-foreign does not belong to this organization',
        errors: ['app routes-foreign does not belong to this organization'],
      },
    ],
    [
      'an unknown app, same answer',
      'DELETE',
      '/v1/apps/no-such-app/profiles/c',
      undefined,
      403,
      {
        error: 'app no-such-app does not belong to this organization',
        errors: ['app no-such-app does not belong to this organization'],
      },
    ],
    [
      'another org’s app, read',
      'GET',
      '/v1/apps/routes-foreign/profiles/c',
      undefined,
      403,
      {
        error: 'app routes-foreign does not belong to this organization',
        errors: ['app routes-foreign does not belong to this organization'],
      },
    ],
    [
      'email lookup without email',
      'GET',
      '/v1/customers',
      undefined,
      400,
      {
        error: 'email: query parameter email is required',
        errors: ['email: query parameter email is required'],
      },
    ],
    [
      'email lookup with another org’s app',
      'GET',
      '/v1/customers?email=a@b.co&app_ids=routes-app-a,routes-foreign',
      undefined,
      403,
      {
        error: 'app routes-foreign does not belong to this organization',
        errors: ['app routes-foreign does not belong to this organization'],
      },
    ],
  ]
  it.each(refusals)('%s: %s %s → %i', async (_name, method, path, body, status, expected) => {
    const res = await send(app, method, path, body)
    expect(res.status).toBe(status)
    expect(await res.json()).toEqual(expected)
    expect(produced).toEqual([])
  })

  it('a body over the limit is 413', async () => {
    const small = await build({ perKeyPerMinute: 100, perCustomerPerMinute: 100, maxBodyBytes: 1024 })
    const res = await send(small, 'PATCH', '/v1/profiles/c', { attributes: { a: 'x'.repeat(2000) } })
    expect(res.status).toBe(413)
    expect(produced).toEqual([])
  })

  it('503 with Retry-After when the bus cannot take the record', async () => {
    busDown = true
    const res = await send(app, 'PATCH', '/v1/profiles/c', { attributes: { a: 1 } })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(await res.json()).toEqual({
      error: 'could not store the change durably; retry',
      errors: ['could not store the change durably; retry'],
    })
  })
})

describe('profile routes: credentials', () => {
  it('401 without valid credentials', async () => {
    const res = await send(app, 'GET', '/v1/profiles/c', undefined, {})
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ error: 'invalid credentials', errors: ['invalid credentials'] })
    const wrong = await send(app, 'GET', '/v1/profiles/c', undefined, basic('nope', 'nope'))
    expect(wrong.status).toBe(401)
  })

  it('403 for a key without the profiles scope', async () => {
    const control = directControl(store)
    const key = await control.createKey(org.id, ['events'])
    const res = await send(
      app,
      'PATCH',
      '/v1/profiles/c',
      { attributes: { a: 1 } },
      basic(key.api_key, key.api_secret),
    )
    expect(res.status).toBe(403)
    expect(await res.json()).toEqual({
      error: "this API key lacks the 'profiles' scope",
      errors: ["this API key lacks the 'profiles' scope"],
    })
    expect(produced).toEqual([])
  })
})

describe('profile routes: limits', () => {
  it('per customer and profile db: counts writes that would change the profile, with Retry-After', async () => {
    const limited = await build({ perKeyPerMinute: 1000, perCustomerPerMinute: 2 })
    expect((await send(limited, 'PATCH', '/v1/profiles/lim', { attributes: { a: 1 } })).status).toBe(202)
    // Refused bodies and reads do not use the customer's budget.
    expect((await send(limited, 'PATCH', '/v1/profiles/lim', { attributes: { _a: 1 } })).status).toBe(400)
    expect((await send(limited, 'GET', '/v1/profiles/lim')).status).toBe(404)
    expect((await send(limited, 'DELETE', '/v1/profiles/lim')).status).toBe(204)
    const res = await send(limited, 'PATCH', '/v1/profiles/lim', { attributes: { a: 2 } })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(30)
    const message =
      'rate limit of 2 requests per minute for this customer exceeded; combine the updates of one customer in one request'
    expect(await res.json()).toEqual({ error: message, errors: [message] })
    // Another customer, and the same customer in another profile db, have budgets of their own.
    expect((await send(limited, 'PATCH', '/v1/profiles/lim-2', { attributes: { a: 1 } })).status).toBe(202)
    expect(
      (await send(limited, 'PATCH', `/v1/apps/${appA.app_id}/profiles/lim`, { attributes: { a: 1 } })).status,
    ).toBe(202)
    expect(produced).toHaveLength(4)
  })

  it('per API key: every request counts', async () => {
    const limited = await build({ perKeyPerMinute: 3, perCustomerPerMinute: 1000 })
    expect((await send(limited, 'GET', '/v1/profiles/k1')).status).toBe(404)
    expect((await send(limited, 'PATCH', '/v1/profiles/k2', { attributes: { a: 1 } })).status).toBe(202)
    expect((await send(limited, 'GET', '/v1/customers/k3')).status).toBe(404)
    const res = await send(limited, 'GET', '/v1/profiles/k4')
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBe(20)
    expect(await res.json()).toEqual({
      error: 'rate limit of 3 requests per minute for this API key exceeded; retry later',
      errors: ['rate limit of 3 requests per minute for this API key exceeded; retry later'],
    })
  })
})

describe('profile routes: reads of absent profiles', () => {
  it.each([
    ['/v1/profiles/nobody', 'profile not found'],
    ['/v1/apps/routes-app-a/profiles/nobody', 'profile not found'],
    ['/v1/customers/nobody', 'customer not found'],
  ])('%s → 404', async (path, error) => {
    const res = await send(app, 'GET', path)
    expect(res.status).toBe(404)
    expect(await res.json()).toEqual({ error, errors: [error] })
  })

  it('an e-mail nobody has → an empty list', async () => {
    const res = await send(app, 'GET', '/v1/customers?email=nobody@example.com')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ customers: [] })
  })
})

describe('profile routes: body encoding (issue 11)', () => {
  const raw = (body: Buffer | string, contentType?: string) =>
    app.request('/v1/profiles/cust-enc', {
      method: 'PATCH',
      headers: { ...auth, ...(contentType === undefined ? {} : { 'Content-Type': contentType }) },
      body,
    })

  it('refuses a body that is not valid UTF-8 (400), producing nothing', async () => {
    const body = Buffer.concat([
      Buffer.from('{"attributes":{"plan":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}}'),
    ])
    const res = await raw(body, 'application/json')
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({
      error: 'request body is not valid UTF-8',
      errors: ['request body is not valid UTF-8'],
    })
    expect(produced).toEqual([])
  })

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'refuses Content-Type %s (415)',
    async (type) => {
      const res = await raw('{"attributes":{"plan":"gold"}}', type)
      expect(res.status).toBe(415)
      expect(((await res.json()) as { error: string }).error).toContain('application/json')
      expect(produced).toEqual([])
    },
  )

  it.each(['application/json; charset=utf-8', 'application/merge-patch+json', undefined])(
    'accepts Content-Type %s',
    async (type) => {
      // A Buffer body, because fetch labels a string body text/plain when no type is given.
      const res = await raw(Buffer.from('{"attributes":{"plan":"gold"}}'), type)
      expect(res.status).toBe(202)
      expect(decoded()[0]!.value.changes).toEqual([
        { index: 0, op: 'assign', attr: 'plan', value: { type: 'string', value: 'gold' } },
      ])
    },
  )

  it('turns a JSON-escaped lone surrogate into U+FFFD and keeps non-BMP text', async () => {
    const res = await raw('{"attributes":{"note":"a\\ud800b","mood":"🎉"}}', 'application/json')
    expect(res.status).toBe(202)
    const changes = decoded()[0]!.value.changes as { attr: string; value: { value: string } }[]
    expect(changes.map((c) => [c.attr, c.value.value])).toEqual([
      ['note', 'a\uFFFDb'],
      ['mood', '🎉'],
    ])
  })
})
