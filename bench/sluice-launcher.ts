import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { SLUICE_SETTINGS, type BenchRun } from './bench-run.ts'
import { UuidSpace } from './generate.ts'
import type { BenchLoad } from './load.ts'
import type { BenchContext } from './scenarios/context.ts'
import { SluiceUnderTest, type RssSampler } from './sluice.ts'

/**
 * The edge instance measures the edge alone, as the edge floor does: its ingestion pipeline does
 * not run (the bodies stay on the local log, discarded with the instance), and nothing is shed for
 * the backlog that builds up (only bodies in flight past the edge's memory bound are refused).
 */
const EDGE_ONLY = {
  SLUICE_WORKER_SKIP_PIPELINES: 'ingestion',
  SLUICE_MAX_BACKLOG_SECONDS: '0',
  SLUICE_MAX_BUS_LAG: '1000000000',
}

/**
 * Starts the benched Sluice instances (each with a data directory, or a database and topics, of
 * its own) and, while signals are caught, stops the running one before the bench exits.
 */
export class SluiceLauncher {
  private readonly run: BenchRun
  private readonly adminToken = randomBytes(24).toString('hex')
  private current: SluiceUnderTest | undefined

  constructor(run: BenchRun) {
    this.run = run
  }

  /** Starts instance `name` as step `step`; undefined when it did not start. */
  async start(step: string, name: 'edge' | 'main'): Promise<SluiceUnderTest | undefined> {
    const { options, distributedEnv, workDir, outDir } = this.run
    this.current = await this.run.step(step, () =>
      SluiceUnderTest.start({
        distributed: options.distributed,
        adminToken: this.adminToken,
        ...(options.distributed && this.run.enginePid ? { enginePid: this.run.enginePid } : {}),
        nodeArgs: options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(outDir, 'profiles', name)}`] : [],
        env: {
          SLUICE_DATA_DIR: join(workDir, name),
          ...SLUICE_SETTINGS,
          ...(name === 'edge' ? EDGE_ONLY : {}),
          ...(options.distributed
            ? {
                ...distributedEnv,
                CLICKHOUSE_DATABASE: `${distributedEnv.CLICKHOUSE_DATABASE}_${name}`,
                SLUICE_TOPIC_PREFIX: `${distributedEnv.SLUICE_TOPIC_PREFIX}${name}.`,
              }
            : { KAFKA_BROKERS: '', CLICKHOUSE_URL: '' }),
        },
      }),
    )
    return this.current
  }

  /** The scenarios' context on `sut`, once the run's tenant is set up there (step `tenant<label>`). */
  async context(
    label: string,
    sut: SluiceUnderTest,
    rss: RssSampler,
    load: BenchLoad,
  ): Promise<BenchContext | undefined> {
    const { run } = this
    const tenant = await run.step(`tenant${label}`, () =>
      sut.tenant(`bench-${load.run8}`, Object.values(load.apps)),
    )
    if (!tenant) return undefined
    return {
      sut,
      tenant,
      progress: run.progress,
      profile: run.options.profile,
      customers: load.customers,
      t0: run.wallStart,
      rss,
      log: run.log,
      uuidSpace: (x) => new UuidSpace(load.run8, x),
      budgetEnd: run.budgetEnd,
    }
  }

  catchSignals(): void {
    process.once('SIGINT', this.onSignal)
    process.once('SIGTERM', this.onSignal)
  }

  releaseSignals(): void {
    process.removeListener('SIGINT', this.onSignal)
    process.removeListener('SIGTERM', this.onSignal)
  }

  private readonly onSignal = () => {
    this.run.progress.stop()
    process.stderr.write('\ninterrupted: stopping Sluice\n')
    void (this.current?.stop(5000) ?? Promise.resolve()).finally(() => process.exit(130))
  }
}

/** Throws, with the end of its output, when `sut` has exited. */
export function assertAlive(sut: SluiceUnderTest): void {
  if (!sut.alive)
    throw new Error(`Sluice exited (${sut.child.exitCode ?? sut.child.signalCode}):\n${sut.output()}`)
}
