import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/**
 * Kafka for tests without Docker: librdkafka's mock cluster, started through kcat (Debian package
 * `kcat`). kcat needs a topic to consume to stay alive; it prints the mock's bootstrap list on stderr:
 *   %5|...|MOCK|rdkafka#consumer-1| [thrd:app]: Mock cluster enabled: original bootstrap.servers and
 *   security.protocol ignored and replaced with 127.0.0.1:42925,127.0.0.1:37607,127.0.0.1:38125
 */

export interface KafkaMock {
  brokers: string[]
  stop(): Promise<void>
}

export interface TestKafka {
  brokers: string[]
  source: 'KAFKA_BROKERS' | 'kcat-mock'
  /** What a Sluice on these brokers is started with: MOCK_KAFKA_ENV on the mock, nothing on Kafka. */
  env: Record<string, string>
  stop(): Promise<void>
}

/**
 * How long a group's leader waits before its SyncGroup on librdkafka's mock cluster
 * (KAFKA_LEADER_SYNC_DELAY_MS, assigner.ts): the mock answers a member's SyncGroup after the
 * leader's with INVALID_REQUEST. 1 s is within the time the mock holds every rebalance anyway.
 */
export const MOCK_LEADER_SYNC_DELAY_MS = 1_000

/** The settings a Sluice on the mock cluster runs with (the tests and the bench set them). */
export const MOCK_KAFKA_ENV: Readonly<Record<string, string>> = {
  KAFKA_LEADER_SYNC_DELAY_MS: String(MOCK_LEADER_SYNC_DELAY_MS),
}

const KCAT = process.env.KCAT_BIN ?? 'kcat'
const START_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 5_000

/**
 * kcat runs under a small shell whose stdin is a pipe from this process: when that pipe closes,
 * because stop() ended it or because this process died in any way (a test worker killed after a
 * hook timeout, SIGKILL), the shell stops kcat, so no mock cluster outlives its test run.
 */
// fd 3 because sh gives background jobs /dev/null as stdin.
const LIFELINE =
  'exec 3<&0; bin=$1; shift; "$bin" "$@" </dev/null & pid=$!; (read -r _ <&3; kill $pid 2>/dev/null) & wait $pid'

export async function startKafkaMock(numBrokers = 3): Promise<KafkaMock> {
  const args = ['-b', 'x:1', '-X', `test.mock.num.brokers=${numBrokers}`, '-C', '-t', 'keepalive']
  const child: ChildProcess = spawn('sh', ['-c', LIFELINE, 'sh', KCAT, ...args], {
    stdio: ['pipe', 'ignore', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))

  const brokers = await new Promise<string[]>((resolve, reject) => {
    let stderr = ''
    const cleanup = (): void => {
      clearTimeout(timer)
      child.off('error', onError)
      child.off('exit', onExit)
      child.stderr?.off('data', onData)
    }
    const fail = (why: string): void => {
      cleanup()
      child.stdin?.end()
      child.kill('SIGTERM')
      reject(new Error(`kafka mock: ${why}; kcat stderr: ${stderr.slice(0, 2000)}`))
    }
    const onError = (err: Error): void => fail(`cannot run sh (${err.message})`)
    const onExit = (code: number | null, signal: string | null): void =>
      fail(
        code === 127
          ? `${KCAT} not found; install it with: apt-get install kcat`
          : `kcat exited early (code ${code}, signal ${signal})`,
      )
    const onData = (chunk: string): void => {
      if (stderr.length < 64 * 1024) stderr += chunk
      const match = /replaced with ((?:[\w.-]+:\d+)(?:,[\w.-]+:\d+)*)/.exec(stderr)
      if (match?.[1] === undefined) return
      cleanup()
      resolve(match[1].split(','))
    }
    const timer = setTimeout(() => fail(`no bootstrap list within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS)
    child.on('error', onError)
    child.on('exit', onExit)
    child.stderr?.setEncoding('utf8')
    child.stderr?.on('data', onData)
  })
  // kcat keeps logging ("Reached end of topic ..."); a full stderr pipe would block it.
  child.stderr?.resume()
  child.on('error', () => {})

  let stopping: Promise<void> | undefined
  return {
    brokers,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.stdin?.end()
        const killed = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
        await exited
        clearTimeout(killed)
      })()
      return stopping
    },
  }
}

/** KAFKA_BROKERS (comma separated) when set, otherwise a fresh librdkafka mock cluster. */
export async function kafkaForTests(): Promise<TestKafka> {
  const fromEnv = (process.env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (fromEnv.length > 0) return { brokers: fromEnv, source: 'KAFKA_BROKERS', env: {}, stop: async () => {} }
  const mock = await startKafkaMock()
  return { brokers: mock.brokers, source: 'kcat-mock', env: { ...MOCK_KAFKA_ENV }, stop: () => mock.stop() }
}

const MOCK_CLUSTER_SCRIPT = fileURLToPath(new URL('../fixtures/rdkafka-mock-cluster.py', import.meta.url))

/**
 * librdkafka's mock cluster (the same library kcat runs) with these topics created up front at
 * their partition counts: through kcat every topic is auto-created with 4 partitions, and the mock
 * answers no CreateTopics. Started by test/fixtures/rdkafka-mock-cluster.py (python3's ctypes over
 * librdkafka1, which kcat depends on); it exits when its stdin closes, so it never outlives the
 * test process.
 */
export async function startKafkaMockWithTopics(
  numBrokers: number,
  topics: readonly { topic: string; partitions: number }[],
): Promise<KafkaMock> {
  const args = [MOCK_CLUSTER_SCRIPT, String(numBrokers), ...topics.map((t) => `${t.topic}:${t.partitions}`)]
  const child = spawn(process.env.PYTHON3_BIN ?? 'python3', args, { stdio: ['pipe', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
  const brokers = await new Promise<string[]>((resolve, reject) => {
    let settled = false
    const timer = setTimeout(() => fail(`no bootstrap list within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS)
    const fail = (why: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      child.stdin?.end()
      child.kill('SIGKILL')
      reject(
        new Error(`kafka mock (python3 ${MOCK_CLUSTER_SCRIPT}): ${why}; output: ${output.slice(0, 2000)}`),
      )
    }
    child.once('error', (err) => fail(`cannot run python3 (${err.message})`))
    child.once('exit', (code) => fail(`exited early (code ${code})`))
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()))
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString()
      const match = /^BOOTSTRAP (\S+)$/m.exec(output)
      if (!match?.[1] || settled) return
      settled = true
      clearTimeout(timer)
      resolve(match[1].split(','))
    })
  })
  child.on('error', () => {})
  let stopping: Promise<void> | undefined
  return {
    brokers,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return
        child.stdin?.end()
        const killed = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
        await exited
        clearTimeout(killed)
      })()
      return stopping
    },
  }
}
