import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { Session } from 'chdb'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { GOLDEN_CLUSTER } from '../../pipelines/connectors/store/migrations.ts'
import { tempDir } from '../helpers/temp.ts'

interface Service {
  image?: string
  build?: string
  command?: string[]
  environment?: Record<string, string | number>
  deploy?: { replicas?: number }
  depends_on?: Record<string, { condition: string }>
  volumes?: string[]
  ports?: string[]
  healthcheck?: { test?: string[] }
}

const root = new URL('../../', import.meta.url)
const read = (path: string) => readFile(new URL(path, root), 'utf8')
const compose = async () =>
  (parse(await read('docker-compose.cluster.yml'), { merge: true }) as { services: Record<string, Service> })
    .services

const BROKERS = ['kafka-1', 'kafka-2', 'kafka-3']
const KEEPERS = ['keeper-1', 'keeper-2', 'keeper-3']
const NODES = ['ch-s1-r1', 'ch-s1-r2', 'ch-s2-r1', 'ch-s2-r2']
const ROLES = ['edge-1', 'edge-2', 'worker', 'scheduler']

describe('docker-compose.cluster.yml', () => {
  it('runs Kafka (3 brokers, KRaft), Keeper (3), ClickHouse (4 nodes), 2 edges, 3 workers, a scheduler and a migration', async () => {
    const services = await compose()
    expect(Object.keys(services).sort()).toEqual(
      [...BROKERS, ...KEEPERS, ...NODES, ...ROLES, 'migrate'].sort(),
    )
    expect(services['edge-1']?.command).toEqual(['edge'])
    expect(services['edge-2']?.command).toEqual(['edge'])
    expect(services.worker?.command).toEqual(['worker'])
    expect(services.worker?.deploy?.replicas).toBe(3)
    expect(services.scheduler?.command).toEqual(['scheduler'])
    expect(services.migrate?.command).toEqual(['migrate'])
    expect(new Set(ROLES.flatMap((r) => services[r]?.ports ?? []))).toEqual(
      new Set(['8080:8080', '8081:8080']),
    )
  })

  it('forms one KRaft quorum of 3 brokers that keep every record on 3 and acknowledge on 2', async () => {
    const services = await compose()
    const voters = BROKERS.map((b) => String(services[b]?.environment?.KAFKA_CONTROLLER_QUORUM_VOTERS))
    expect(new Set(voters)).toEqual(new Set(['1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093']))
    BROKERS.forEach((broker, i) => {
      const env = services[broker]?.environment ?? {}
      expect(services[broker]?.image).toMatch(/^apache\/kafka:/)
      expect(env.KAFKA_PROCESS_ROLES).toBe('broker,controller')
      expect(Number(env.KAFKA_NODE_ID)).toBe(i + 1)
      expect(env.KAFKA_ADVERTISED_LISTENERS).toBe(`PLAINTEXT://${broker}:9092`)
      expect(env.CLUSTER_ID).toBe(services['kafka-1']?.environment?.CLUSTER_ID)
      expect(Number(env.KAFKA_DEFAULT_REPLICATION_FACTOR)).toBe(3)
      expect(Number(env.KAFKA_MIN_INSYNC_REPLICAS)).toBe(2)
      expect(services[broker]?.volumes).toEqual([`${broker}:/var/lib/kafka/data`])
    })
  })

  it('points every Sluice role at all brokers, a ClickHouse node and the cluster, after the migration', async () => {
    const services = await compose()
    for (const role of [...ROLES, 'migrate']) {
      const env = services[role]?.environment ?? {}
      expect(env.KAFKA_BROKERS).toBe(BROKERS.map((b) => `${b}:9092`).join(','))
      expect(env.CLICKHOUSE_CLUSTER).toBe(GOLDEN_CLUSTER.cluster)
      const host = /^http:\/\/([\w-]+):8123$/.exec(String(env.CLICKHOUSE_URL))?.[1]
      expect(NODES).toContain(host)
      if (role !== 'migrate')
        expect(services[role]?.depends_on?.migrate?.condition).toBe('service_completed_successfully')
    }
    for (const node of NODES) expect(services.migrate?.depends_on?.[node]?.condition).toBe('service_healthy')
  })

  it('gives each ClickHouse node the cluster configuration, Keeper and a (shard, replica) that ClickHouse reads as remote_servers says', async () => {
    const services = await compose()
    const macros = new Map<string, { shard: string; replica: string }>()
    for (const node of NODES) {
      const service = services[node]
      expect(service?.image).toMatch(/^clickhouse\/clickhouse-server:/)
      expect(service?.volumes).toContain(
        './deploy/cluster/clickhouse/cluster.xml:/etc/clickhouse-server/config.d/cluster.xml:ro',
      )
      for (const keeper of KEEPERS) expect(service?.depends_on?.[keeper]?.condition).toBe('service_healthy')
      const env = service?.environment ?? {}
      macros.set(node, { shard: String(env.CLICKHOUSE_SHARD), replica: String(env.CLICKHOUSE_REPLICA) })
    }
    // Replica names are unique in the cluster: tables on every node share one Keeper path.
    expect(new Set([...macros.values()].map((m) => m.replica)).size).toBe(NODES.length)

    // ClickHouse's own configuration loader reads the file (chdb is the same engine), with one
    // node's environment: the cluster it defines, and that node's macros.
    const last = NODES.at(-1) as string
    const mine = macros.get(last) as { shard: string; replica: string }
    Object.assign(process.env, {
      CLICKHOUSE_SHARD: mine.shard,
      CLICKHOUSE_REPLICA: mine.replica,
      CLICKHOUSE_USER: String(services[last]?.environment?.CLICKHOUSE_USER),
      CLICKHOUSE_PASSWORD: String(services[last]?.environment?.CLICKHOUSE_PASSWORD),
    })
    const dir = await tempDir('compose-cluster')
    const config = fileURLToPath(new URL('deploy/cluster/clickhouse/cluster.xml', root))
    const session = new Session(dir.path, { connectionArgs: [`--config-file=${config}`] })
    try {
      const query = async (sql: string) =>
        (await session.queryAsync(sql, { format: 'JSONEachRow' }))
          .text()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>)
      const hosts = await query(
        `SELECT shard_num, replica_num, host_name, port, user FROM system.clusters
         WHERE cluster = '${GOLDEN_CLUSTER.cluster}' ORDER BY shard_num, replica_num`,
      )
      expect(hosts).toEqual(
        NODES.map((node, i) => ({
          shard_num: Number(macros.get(node)?.shard),
          replica_num: (i % 2) + 1,
          host_name: node,
          port: 9000,
          user: 'sluice',
        })),
      )
      expect(await query('SELECT macro, substitution FROM system.macros ORDER BY macro')).toEqual([
        { macro: 'replica', substitution: mine.replica },
        { macro: 'shard', substitution: mine.shard },
      ])
    } finally {
      session.close()
      await dir.cleanup()
    }
    const xml = await read('deploy/cluster/clickhouse/cluster.xml')
    for (const keeper of KEEPERS) expect(xml).toContain(`<host>${keeper}</host>`)
  })

  it('forms a Keeper quorum of 3, each node knowing its id', async () => {
    const services = await compose()
    const xml = await read('deploy/cluster/keeper/keeper.xml')
    const servers = [
      ...xml.matchAll(/<server>\s*<id>(\d+)<\/id>\s*<hostname>([\w-]+)<\/hostname>\s*<port>(\d+)<\/port>/g),
    ]
    expect(servers.map((m) => [Number(m[1]), m[2], Number(m[3])])).toEqual(
      KEEPERS.map((keeper, i) => [i + 1, keeper, 9234]),
    )
    expect(xml).toContain('<server_id from_env="KEEPER_SERVER_ID"/>')
    KEEPERS.forEach((keeper, i) => {
      expect(services[keeper]?.image).toMatch(/^clickhouse\/clickhouse-keeper:/)
      expect(Number(services[keeper]?.environment?.KEEPER_SERVER_ID)).toBe(i + 1)
      expect(services[keeper]?.volumes).toContain(
        './deploy/cluster/keeper/keeper.xml:/etc/clickhouse-keeper/keeper_config.xml:ro',
      )
      expect(services[keeper]?.healthcheck?.test?.[1]).toContain('http://127.0.0.1:9182/ready')
    })
    expect(xml).toMatch(/<http_control>\s*<port>9182<\/port>\s*<readiness>\s*<endpoint>\/ready<\/endpoint>/)
  })
})
