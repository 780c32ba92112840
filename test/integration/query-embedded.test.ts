import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runQueryScenario } from './query-scenario.ts'

// Generous limits here: the malformed-input run sends hundreds of queries with one key.
const MANY = '1000000'

describe('Query API, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({
      SLUICE_QUERY_RATE_PER_KEY_PER_MIN: MANY,
      SLUICE_QUERY_RATE_PER_KEY_PER_HOUR: MANY,
      SLUICE_QUERY_RATE_PER_KEY_PER_DAY: MANY,
    })
  })
  afterAll(() => sluice.close())

  it('answers the documented metrics, dimensions and conditions with the numbers of the posted events', async () => {
    await runQueryScenario(sluice, 'emb')
  })

  it('answers whatever an analyst sends with 200 or a 4xx in the error shape, never a 5xx', async () => {
    const tenant = await sluice.tenant('fuzz', ['fuzz-app'])
    const names = fc.constantFrom(
      'users',
      'occurrences',
      'sessions',
      'average_session_length',
      'new_users',
      'ltv',
      'profiles',
      'avg(a:x)',
      'sum(n:Amount (USD))',
      'avg(a:',
      'day',
      'week',
      'month',
      'hour',
      'event_name',
      'a:x',
      'n:y',
      'birth_day',
      'new_device',
      'custom_3',
      'profile_attribute_key',
      '',
      ',',
      '((',
      '[',
      '["users"',
      'a:\u0000',
    )
    const list = fc.array(names, { maxLength: 4 }).map((xs) => xs.join(','))
    const conditionValue = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc
        .tuple(
          fc.constantFrom('in', 'not_in', 'between', '==', '!=', '<', '>=', 'in_groups', 'like'),
          fc.array(
            fc.oneof(
              fc.constant(null),
              fc.string({ maxLength: 5 }),
              fc.double(),
              fc.integer(),
              fc.jsonValue(),
            ),
          ),
        )
        .map(([op, rest]) => [op, ...rest]),
    )
    const conditions = fc.oneof(
      fc.dictionary(names, conditionValue, { maxKeys: 3 }).map((o) => JSON.stringify(o)),
      fc.string({ maxLength: 20 }),
    )
    const param = fc.oneof(
      fc.tuple(
        fc.constantFrom('metrics', 'dimensions', 'order', 'metrics[]', 'dimensions[]', 'order[]'),
        list,
      ),
      fc.tuple(fc.constant('conditions'), conditions),
      fc.tuple(
        fc.constantFrom('limit', 'days', 'profiledb_id', 'translate', 'app_ids[]', 'app_id'),
        fc.oneof(fc.integer({ min: -10, max: 100_000 }).map(String), fc.string({ maxLength: 6 })),
      ),
      fc.tuple(
        fc.constantFrom(
          'conditions[day][]',
          'conditions[a:x][]',
          'conditions[users][]',
          'conditions[a][b][c][d][e]',
          'metrics[x]',
        ),
        fc.string({ maxLength: 10 }),
      ),
    )
    await fc.assert(
      fc.asyncProperty(
        fc.array(param, { maxLength: 7 }),
        fc.boolean(),
        fc.constantFrom('GET', 'POST-form', 'POST-json'),
        async (params, withApp, how) => {
          const pairs: [string, string][] = [
            ...(withApp ? [['app_id', 'fuzz-app'] as [string, string]] : []),
            ...params,
          ]
          const qs = new URLSearchParams(pairs).toString()
          const res =
            how === 'GET'
              ? await fetch(`${sluice.url}/v1/query?${qs}`, { headers: { Authorization: tenant.auth } })
              : await fetch(`${sluice.url}/v1/query`, {
                  method: 'POST',
                  headers: {
                    Authorization: tenant.auth,
                    'Content-Type':
                      how === 'POST-json' ? 'application/json' : 'application/x-www-form-urlencoded',
                  },
                  body: how === 'POST-json' ? JSON.stringify(Object.fromEntries(pairs)) : qs,
                })
          const text = await res.text()
          expect([200, 400, 403], `${how} ${qs}: ${text}`).toContain(res.status)
          const body = JSON.parse(text) as { results?: unknown[]; error?: string; errors?: string[] }
          if (res.status === 200) expect(Array.isArray(body.results)).toBe(true)
          else expect(body.errors).toEqual([body.error])
        },
      ),
      { numRuns: 150 },
    )
    // Still serving.
    const after = await fetch(`${sluice.url}/v1/query?app_id=fuzz-app&metrics=users`, {
      headers: { Authorization: tenant.auth },
    })
    expect(await after.json()).toMatchObject({ results: [{ users: 0 }] })
  })
})

describe('Query API limits per API key, embedded mode', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({ SLUICE_QUERY_RATE_PER_KEY_PER_MIN: '3' })
  })
  afterAll(() => sluice.close())

  it('answers 429 with Retry-After past the minute limit, for that key only', async () => {
    const a = await sluice.tenant('limits-a', ['limits-a-app'])
    const b = await sluice.tenant('limits-b', ['limits-b-app'])
    const ask = (auth: string, app: string) =>
      fetch(`${sluice.url}/v1/query?app_id=${app}&metrics=occurrences`, { headers: { Authorization: auth } })
    for (let i = 0; i < 3; i++) expect((await ask(a.auth, 'limits-a-app')).status).toBe(200)
    const over = await ask(a.auth, 'limits-a-app')
    expect(over.status).toBe(429)
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(((await over.json()) as { error: string }).error).toContain('3 queries per minute')
    const apps = await fetch(`${sluice.url}/v1/apps`, { headers: { Authorization: a.auth } })
    expect(apps.status).toBe(429)
    const other = await ask(b.auth, 'limits-b-app')
    expect(await other.json()).toMatchObject({ results: [{ occurrences: 0 }] })
  })
})
