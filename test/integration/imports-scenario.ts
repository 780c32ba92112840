import { gzipSync } from 'node:zlib'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { postSdk, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'

/** Profile and audience imports (docs/imports.md), run the same way in both modes. */

interface Answer {
  status: number
  body: Record<string, unknown>
}

function client(sluice: InProcessSluice, auth: string) {
  const send = async (
    method: string,
    path: string,
    body?: Buffer | string,
    headers: Record<string, string> = {},
  ) => {
    const res = await fetch(`${sluice.url}${path}`, {
      method,
      headers: { Authorization: auth, ...headers },
      ...(body !== undefined && { body }),
    })
    const text = await res.text()
    return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> }
  }
  const done = (path: string) =>
    waitFor(
      () => send('GET', path),
      (r: Answer) => r.body.state === 'done' || r.body.state === 'failed',
      { what: `import ${path} done`, timeoutMs: 60_000 },
    )
  return { send, done }
}

export async function runImportScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appKey = `imp-${suffix}`
  const tenant = await sluice.tenant(`imports-${suffix}`, [appKey])
  const other = await sluice.tenant(`imports-other-${suffix}`, [`imp-other-${suffix}`])
  const api = client(sluice, tenant.auth)
  const csv = { 'Content-Type': 'text/csv' }

  // A profile that exists before: the import changes only what its rows name.
  expect(
    (
      await api.send('PATCH', '/v1/profiles/c1', JSON.stringify({ attributes: { old: 1, keep: 'yes' } }), {
        'Content-Type': 'application/json',
      })
    ).status,
  ).toBe(202)

  // 1. A CSV, gzip: types from the header, a deletion, a bad UTF-8 line, a value over the limits.
  const body = Buffer.concat([
    Buffer.from('customer_id,plan,age,renewal:date,tags:set,zip:string,old\n'),
    Buffer.from('c1,gold,41.9,2025-12-31T10:00:00Z,vip|beta|vip,01234,\\N\n'),
    Buffer.from('c2,silver,7,,a|2,,\n'),
    Buffer.from([0x63, 0x33, 0x2c, 0xff, 0x0a]),
    Buffer.from(`c4,${'x'.repeat(300)},1,,,,\n`),
    Buffer.from('c5,,,,,,\n'),
    Buffer.from('c6,"quoted, plan",-3,2024-02-29,"[""x"",""y""]",,\n'),
  ])
  const gz = gzipSync(body)
  const first = await api.send('POST', '/v1/imports/profiles', gz, {
    'Content-Type': 'text/csv',
    'Content-Encoding': 'gzip',
  })
  expect(first.status).toBe(202)
  const id = first.body.import_id as string
  expect(id).toMatch(/^[A-Za-z0-9_-]{27}$/)
  const receipt = (await api.done(`/v1/imports/${id}`)).body
  expect(receipt).toMatchObject({
    import_id: id,
    kind: 'profiles',
    state: 'done',
    format: 'csv',
    compression: 'gzip',
    rows_read: 6,
    rows_applied: 3,
    rows_ignored: 0,
    rows_rejected: 3,
  })
  expect(receipt.rejected_rows).toEqual([
    { line: 4, reason: 'the line is not valid UTF-8' },
    { line: 5, customer_id: 'c4', reason: 'plan: string value is longer than 255 characters' },
    { line: 6, customer_id: 'c5', reason: 'the row changes no attribute (every cell is empty)' },
  ])
  expect((await api.send('GET', '/v1/profiles/c1')).body.attributes).toEqual({
    keep: 'yes',
    plan: 'gold',
    age: 41,
    renewal: '2025-12-31',
    tags: ['vip', 'beta'],
    zip: '01234',
  })
  expect((await api.send('GET', '/v1/profiles/c2')).body.attributes).toEqual({
    plan: 'silver',
    age: 7,
    tags: ['a', '2'],
  })
  expect((await api.send('GET', '/v1/profiles/c6')).body.attributes).toEqual({
    plan: 'quoted, plan',
    age: -3,
    renewal: '2024-02-29',
    tags: ['x', 'y'],
  })
  expect((await api.send('GET', '/v1/profiles/c4')).status).toBe(404)
  // The change log holds one row per applied import row, keyed by import and line.
  const changes = async () =>
    store.query<{ change_id: string; customer_id: string; updates: string; deletes: string[] }>(
      `SELECT change_id, customer_id, updates, deletes FROM profile_changes FINAL
       WHERE change_id LIKE {p:String} ORDER BY change_id`,
      { p: `import:${id}:%` },
    )
  const logged = await changes()
  expect(logged.map((r) => [r.change_id, r.customer_id])).toEqual([
    [`import:${id}:2`, 'c1'],
    [`import:${id}:3`, 'c2'],
    [`import:${id}:7`, 'c6'],
  ])
  expect(logged[0]!.deletes).toEqual(['old'])
  expect(JSON.parse(logged[0]!.updates)).toMatchObject({ plan: 'gold', zip: '01234' })

  // 2. The same bytes again: the same import, applied once.
  const again = await api.send('POST', '/v1/imports/profiles', gz, {
    'Content-Type': 'text/csv',
    'Content-Encoding': 'gzip',
  })
  expect(again).toMatchObject({ status: 202, body: { import_id: id, duplicate: true, state: 'read' } })
  expect(await changes()).toHaveLength(3)
  // Another org cannot read the receipt.
  expect((await client(sluice, other.auth).send('GET', `/v1/imports/${id}`)).status).toBe(404)

  // 3. JSON lines at app level, both syntaxes; an increment applied once even when sent twice
  // under one Idempotency-Key.
  const jsonl = [
    JSON.stringify({ customer_id: 'c1', changes: [{ op: 'increment', attr: 'visits', value: 2 }] }),
    JSON.stringify({ customer_id: 'c7', attributes: { level: 3, $email: 'x@y.z' } }),
    '{"customer_id": "c8"}',
    'not json',
  ].join('\n')
  const keyed = { 'Content-Type': 'application/x-ndjson', 'Idempotency-Key': `k-${suffix}` }
  const j1 = await api.send('POST', `/v1/apps/${appKey}/imports/profiles`, jsonl, keyed)
  expect(j1.status).toBe(202)
  const j1r = (await api.done(`/v1/imports/${j1.body.import_id as string}`)).body
  expect(j1r).toMatchObject({ state: 'done', rows_read: 4, rows_applied: 1, rows_rejected: 3 })
  expect(j1r.rejected_rows).toEqual([
    {
      line: 2,
      customer_id: 'c7',
      reason: '$email: $email can only be set on the org-level profile (/v1/profiles/:customer_id)',
    },
    {
      line: 3,
      customer_id: 'c8',
      reason: 'the line must have "attributes" (an object) or "changes" (an array)',
    },
    { line: 4, reason: 'the line is not JSON' },
  ])
  const j2 = await api.send('POST', `/v1/apps/${appKey}/imports/profiles`, `${jsonl}\n`, keyed)
  expect(j2.body).toMatchObject({ import_id: j1.body.import_id, duplicate: true })
  expect((await api.send('GET', `/v1/apps/${appKey}/profiles/c1`)).body.attributes).toEqual({ visits: 2 })

  // 4. Bodies refused whole, before anything is applied.
  const refused = [
    [
      await api.send('POST', '/v1/imports/profiles', 'plan,age\ngold,1\n', csv),
      400,
      'the header has no customer_id column',
    ],
    [
      await api.send(
        'POST',
        '/v1/imports/profiles',
        gzipSync(Buffer.from('customer_id,plan\nz1,gold\n'.repeat(500))).subarray(0, 60),
        {
          'Content-Type': 'text/csv',
        },
      ),
      400,
      'invalid gzip body: unexpected end of file',
    ],
    [
      await api.send('POST', '/v1/imports/profiles', 'customer_id,plan\nz1,a\n', {
        ...csv,
        'Content-Encoding': 'br',
      }),
      415,
      'Content-Encoding must be gzip or identity, not br',
    ],
    [
      await api.send('POST', '/v1/imports/profiles', 'customer_id,plan\nz1,a\n', {
        'Content-Type': 'text/csv; charset=latin1',
      }),
      415,
      'imports are UTF-8; charset latin1 is not supported',
    ],
    [await api.send('POST', '/v1/imports/profiles', '', csv), 400, 'import body is empty'],
  ] as const
  for (const [answer, status, error] of refused)
    expect(answer).toEqual({ status, body: { error, errors: [error] } })
  expect((await api.send('GET', '/v1/profiles/z1')).status).toBe(404)

  // 5. An audience import: customers and unknown ones; a static audience counted like any.
  const now = Date.now()
  const tx = await postSdk(sluice, appKey, [
    sessionRow({ install: `i1-${suffix}`, customer: 'c1', at: now - 60_000, country: 'fr', model: 'm' }),
    sessionRow({ install: `i2-${suffix}`, customer: 'c2', at: now - 60_000, country: 'fr', model: 'm' }),
    sessionRow({ install: `i3-${suffix}`, customer: 'c3', at: now - 60_000, country: 'fr', model: 'm' }),
  ])
  await sdkReceiptDone(sluice, appKey, tx)
  const base = `/api/v6/orgs/${tenant.orgId}/apps/${appKey}/audiences`
  const members = gzipSync('customer_id\nc1\nc2\nnobody\nc1\n\n')
  const a1 = await api.send('POST', `${base}/imports?name=Imported`, members, csv)
  expect(a1.status).toBe(202)
  const audienceId = a1.body.audience_id as number
  expect(audienceId).toBeGreaterThan(0)
  const a1r = (await api.done(`${base}/imports/${a1.body.import_id as string}`)).body
  expect(a1r).toMatchObject({
    state: 'done',
    audience_id: audienceId,
    rows_read: 4,
    rows_rejected: 0,
    members_known: 2,
    members_unknown: 1,
  })
  const counted = await waitFor(
    () => api.send('GET', `${base}/${audienceId}/segmentation`),
    (r: Answer) => JSON.stringify(r.body).includes('"user_count":2'),
    { what: 'static audience counted', timeoutMs: 30_000 },
  )
  expect(JSON.stringify(counted.body)).toContain('"has_push":2')
  // Add install ids to it (one by install id, one unknown); then replace it by e-mails.
  const a2 = await api.send(
    'POST',
    `${base}/imports?audience_id=${audienceId}&mode=add`,
    `{"install_id":"i3-${suffix}"}\n{"install_id":"nope"}\n{"email":"x@y.z"}\n`,
    {
      'Content-Type': 'application/x-ndjson',
    },
  )
  const a2r = (await api.done(`${base}/imports/${a2.body.import_id as string}`)).body
  expect(a2r).toMatchObject({
    state: 'done',
    rows_read: 3,
    rows_rejected: 1,
    members_known: 1,
    members_unknown: 1,
  })
  expect(a2r.rejected_rows).toEqual([
    { line: 3, reason: 'this import lists install_ids; the line has email' },
  ])
  await waitFor(
    () => api.send('GET', `${base}/${audienceId}/segmentation`),
    (r: Answer) => JSON.stringify(r.body).includes('"user_count":3'),
    { what: 'static audience counted after add', timeoutMs: 30_000 },
  )
  // A rule audience cannot be imported into.
  const rules = await api.send(
    'POST',
    base,
    JSON.stringify({
      name: 'r',
      target_rules: { profile: { operator: 'and', criteria: [{ key: 'plan', operator: 'is_defined' }] } },
    }),
    {
      'Content-Type': 'application/json',
    },
  )
  expect(rules.status).toBe(201)
  const intoRules = await api.send(
    'POST',
    `${base}/imports?audience_id=${rules.body.id as number}`,
    'customer_id\nc1\n',
    csv,
  )
  expect(intoRules.status).toBe(422)
  // Audience members resolve through the compiler wherever an audience id works: push.
  const push = await api.send(
    'POST',
    `/v2/push/${appKey}`,
    JSON.stringify({ target_type: 'audience_id', messages: [{ target: audienceId, alert: 'hi' }] }),
    { 'Content-Type': 'application/json' },
  )
  expect(push.status).toBe(202)
}
