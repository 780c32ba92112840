import { topology } from './services/topology.ts'
import { startKafkaMockWithTopics } from './test/helpers/kafka-mock.ts'
import { startClickHouseStandin } from './test/helpers/clickhouse-standin.ts'
import { createTenant, startSluice } from './test/helpers/sluice-process.ts'
import { postSdkTo, sessionRow } from './test/helpers/ingestion-scenario.ts'
import { streamUploads } from './test/helpers/upload-stream.ts'
import { createClient } from '@clickhouse/client'
const prefix = 'sluice.man.'
const t0 = Date.now()
const log = (...a: unknown[]) => console.log(((Date.now() - t0) / 1000).toFixed(1), ...a)
const mock = await startKafkaMockWithTopics(3, Object.values(topology(prefix, 8).topics))
const ch = await startClickHouseStandin()
log('standin', ch.url)
const env = { KAFKA_BROKERS: mock.brokers.join(','), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'sluice_man', SLUICE_TOPIC_PREFIX: prefix, SLUICE_PARTITIONS: '8', KAFKA_SESSION_TIMEOUT_MS: '6000', SLUICE_DATA_DIR: '/tmp/h47-data', SLUICE_ADMIN_TOKEN: 'tok-123456789012345', SLUICE_LOG_LEVEL: 'debug', SLUICE_WORKER_SKIP_PIPELINES: 'audiences,exports,campaigns,imports' }
const edge = await startSluice(env, ['edge'], 120000)
log('edge')
const worker = await startSluice(env, ['worker'], 120000)
log('worker')
const { auth } = await createTenant(edge.url, env.SLUICE_ADMIN_TOKEN, 'man-app')
log('tenant')
await postSdkTo(edge.url, 'man-app', ['a', 'b'].map((c, i) => sessionRow({ install: `i-${c}`, customer: c, at: Date.now() - 10000 + i, country: 'fr', model: 'm' })))
log('sdk')
const s = streamUploads({ url: () => edge.url, auth, appId: 'man-app', customers: ['a', 'b'], concurrency: 1, paceMs: 2000 })
const c = createClient({ url: ch.url, database: 'sluice_man' })
for (let i = 0; i < 8; i++) {
  await new Promise((r) => setTimeout(r, 5000))
  const n = await (await c.query({ query: 'SELECT count() AS n FROM events', format: 'JSONEachRow' })).json()
  const m = await (await fetch(`${worker.opsUrl}/metrics`)).text()
  const tx = s.sent.at(-3)?.transactionId
  if (tx) log('receipt', await (await fetch(`${edge.url}/v0/uploads/${tx}`, { headers: { Authorization: auth } })).text())
  log('stored', JSON.stringify(n), 'sent', s.sent.length, m.split('\n').filter((l) => /^sluice_stage_(duration_seconds_(sum|count)|records_total|batches_in)/.test(l)).join(' | '))
}
await s.stop()
console.log(worker.output().split('\n').filter((l) => !l.includes('kafkajs') && !l.includes('pipeline started')).map((l) => l.slice(0, 300)).slice(-60).join('\n'))
await edge.stop(); await worker.stop()
await ch.stop(); await mock.stop()
