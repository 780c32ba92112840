import { spawn, type ChildProcess } from 'node:child_process'

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
  stop(): Promise<void>
}

const KCAT = process.env.KCAT_BIN ?? 'kcat'
const START_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 5_000

const live = new Set<ChildProcess>()
let exitHookInstalled = false

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // kcat would otherwise outlive a test process that dies without running its afterAll hooks.
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL')
  })
}

export async function startKafkaMock(numBrokers = 3): Promise<KafkaMock> {
  installExitHook()
  const child = spawn(
    KCAT,
    ['-b', 'x:1', '-X', `test.mock.num.brokers=${numBrokers}`, '-C', '-t', 'keepalive'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  live.add(child)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  void exited.then(() => live.delete(child))

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
      child.kill('SIGKILL')
      reject(new Error(`kafka mock: ${why}; kcat stderr: ${stderr.slice(0, 2000)}`))
    }
    const onError = (err: Error): void =>
      fail(`cannot run ${KCAT} (${err.message}); install it with: apt-get install kcat`)
    const onExit = (code: number | null, signal: string | null): void =>
      fail(`kcat exited early (code ${code}, signal ${signal})`)
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
        child.kill('SIGTERM')
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
  if (fromEnv.length > 0) return { brokers: fromEnv, source: 'KAFKA_BROKERS', stop: async () => {} }
  const mock = await startKafkaMock()
  return { brokers: mock.brokers, source: 'kcat-mock', stop: () => mock.stop() }
}
