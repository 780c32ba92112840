import { gzipSync } from 'node:zlib'
import { expect } from 'vitest'
import type { InProcessSluice } from './sluice-inprocess.ts'
import { waitFor } from './wait-for.ts'
import { documentedFetch } from './openapi-check.ts'

export const SCHEMA_URL = 'https://sluice.example/schemas/events/v0.json'

let counter = 0
/** An event uuid in canonical form (lower case 8-4-4-4-12), unique within the test run. */
export function uuid(): string {
  counter++
  const rand = Math.random().toString(16).slice(2, 10).padEnd(8, '0')
  const hex = `${rand}${Date.now().toString(16).padStart(12, '0')}${counter.toString(16).padStart(12, '0')}`
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export const lines = (objects: unknown[]) =>
  objects.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n') + '\n'

/** An upload body of one valid event (a fresh uuid each call). */
export const oneEventBody = () =>
  lines([
    {
      schema_url: SCHEMA_URL,
      app_uuid: 'a',
      customer_id: 'c',
      event_name: 'e',
      event_time: Date.now(),
      uuid: uuid(),
    },
  ])

export interface Receipt {
  transaction_id: string
  state: string
  lines: number
  accepted: number
  rejected: number
  rejected_lines: { line: number; uuid: string | null; reason: string; detail: string }[]
}

export async function postUpload(
  sluice: InProcessSluice,
  auth: string,
  body: string | Buffer,
  headers: Record<string, string> = { 'Content-Type': 'application/json' },
): Promise<Response> {
  return documentedFetch(`${sluice.url}/v0/uploads`, {
    method: 'POST',
    headers: { Authorization: auth, ...headers },
    body,
  })
}

export async function postSdk(
  sluice: InProcessSluice,
  appKey: string,
  rows: unknown[],
  gzip = false,
): Promise<string> {
  return postSdkTo(sluice.url, appKey, rows, gzip)
}

export async function postSdkTo(url: string, appKey: string, rows: unknown[], gzip = false): Promise<string> {
  const text = lines(rows)
  const res = await documentedFetch(`${url}/v1/sdk/apps/${appKey}/uploads`, {
    method: 'POST',
    headers: gzip ? { 'Content-Type': 'application/x-gzip' } : { 'Content-Type': 'application/json' },
    body: gzip ? gzipSync(text) : text,
  })
  expect(res.status).toBe(202)
  return ((await res.json()) as { transaction_id: string }).transaction_id
}

/** Polls an upload's receipt until it is done; `uploadsPath` is the path the upload went to. */
export async function receiptDone(
  sluice: InProcessSluice,
  auth: string,
  tx: string,
  uploadsPath = '/v0/uploads',
): Promise<Receipt> {
  return waitFor(
    async () =>
      (await (
        await documentedFetch(`${sluice.url}${uploadsPath}/${tx}`, { headers: { Authorization: auth } })
      ).json()) as Receipt,
    (r) => r.state === 'done',
    { what: `receipt of ${tx}`, timeoutMs: 30_000 },
  )
}

export async function sdkReceiptDone(sluice: InProcessSluice, appKey: string, tx: string): Promise<Receipt> {
  return waitFor(
    async () =>
      (await (await documentedFetch(`${sluice.url}/v1/sdk/apps/${appKey}/uploads/${tx}`)).json()) as Receipt,
    (r) => r.state === 'done',
    { what: `SDK receipt of ${tx}`, timeoutMs: 30_000 },
  )
}

/** An SDK session-start row with full dimensions. */
export function sessionRow(o: {
  install: string
  customer?: string
  at: number
  country: string
  model: string
  app_ver?: string
  language?: string
}) {
  return {
    type: 's',
    uuid: uuid(),
    install_uuid: o.install,
    device_uuid: `dev-${o.install}`,
    session_uuid: `sess-${uuid()}`,
    at_millis: o.at,
    ...(o.customer ? { customer_ids: { customer_id: o.customer } } : {}),
    app_ver: o.app_ver ?? '2.1.0',
    os_ver: '17.1',
    platform: 'iOS',
    model: o.model,
    country: o.country,
    language: o.language ?? 'en',
    device_timezone: 'Europe/Paris',
    push_token: `tok-${o.install}`,
    push_status: 'Enabled (Prominent)',
  }
}
