import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpuSnapshot, gitInfo, machineInfo, type CpuSnapshot } from './machine.ts'
import type { BenchOptions } from './options.ts'
import { Progress } from './progress.ts'
import type { BenchResults } from './report.ts'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Settings the benched Sluice gets beyond its defaults (see bench/README.md). */
export const SLUICE_SETTINGS = {
  // The per-key upload limit (150/s) would cap every throughput scenario at 150 bodies/s.
  SLUICE_UPLOAD_RATE_PER_KEY: '1000000',
  // The per-key profile limit (50,000/min) would cap the PATCH scenario at 833/s; the
  // per-customer limit (15/min) stays: the load is spread over many customers instead.
  SLUICE_PROFILE_RATE_PER_KEY_PER_MIN: '100000000',
}

/**
 * One bench run as its steps go: the results they fill in (all but the figures, assembled at the
 * end), the time each step took, the progress line and the run's time budget.
 */
/** A quick run's budget (of a part, see startBudget): the ingestion scenarios fit in it on 2 cores. */
const QUICK_BUDGET_MS = 200_000

export class BenchRun {
  readonly options: BenchOptions
  /** Database and topic prefix of the run's own in distributed mode; empty in embedded mode. */
  readonly distributedEnv: Readonly<Record<string, string>>
  /** The ClickHouse stand-in's process when the bench started it: its CPU is the engine's. */
  readonly enginePid: number | undefined
  readonly progress = new Progress()
  readonly log = (line: string) => this.progress.log(line)
  /** performance.now() at the start of the run: every time series is in seconds since then. */
  readonly wallStart: number
  /** performance.now() by which a quick run must be done with its waits (Infinity for a full run). */
  budgetEnd: number
  readonly outDir: string
  /** Data directories of the benched Sluices and the baselines, removed at the end (--keep-data keeps them). */
  readonly workDir: string
  readonly cpuStart: CpuSnapshot
  readonly machine: ReturnType<typeof machineInfo>
  readonly results: Omit<BenchResults, 'figures'>

  constructor(options: BenchOptions, distributedEnv: Record<string, string>, enginePid?: number) {
    this.options = options
    this.distributedEnv = distributedEnv
    this.enginePid = enginePid
    this.wallStart = performance.now()
    // --quick must end within 3 minutes: waits are cut to fit, and scenarios that no longer fit are
    // skipped (reported as such) rather than overrun.
    this.budgetEnd = options.profile.name === 'quick' ? this.wallStart + QUICK_BUDGET_MS : Infinity
    const startedAt = new Date()
    const runId = startedAt.toISOString().replace(/[:.]/g, '-')
    this.outDir = resolve(options.out ?? join(ROOT, 'bench', 'results', runId))
    this.workDir = mkdtempSync(join(tmpdir(), 'sluice-bench-'))
    this.cpuStart = cpuSnapshot()
    this.machine = machineInfo()
    const settings: Record<string, string> = { ...SLUICE_SETTINGS, ...distributedEnv }
    for (const [k, v] of Object.entries(process.env))
      if (k.startsWith('SLUICE_') && v !== undefined) settings[k] = v
    const notes: string[] = [
      `Sluice started with ${Object.entries(SLUICE_SETTINGS)
        .map(([k, v]) => `${k}=${v}`)
        .join(
          ', ',
        )} (the per-key limits would otherwise cap the throughput scenarios); every other setting at its default unless set in the environment.`,
      `Senders back off at most 200 ms after a 429/503 (not the full Retry-After) so the pipeline stays saturated in the max-rate scenarios.`,
    ]
    this.results = {
      version: 1,
      run: {
        id: runId,
        startedAt: startedAt.toISOString(),
        mode: options.distributed ? 'distributed' : 'embedded',
        profile: options.profile.name,
        seed: options.seed,
        git: gitInfo(ROOT),
        machine: this.machine,
        settings,
        notes,
      },
      baselines: { bare: [], chdb: [] },
      scenarios: { edge: [], e2e: [] },
      durations: {},
      rss: [],
      errors: [],
    }
    this.log(
      `sluice bench: ${options.profile.name} run, ${this.results.run.mode} mode, seed ${options.seed}; ${this.machine.cores} cores, load average ${this.machine.loadAverage.join(' ')}`,
    )
  }

  /** Runs one step and records its duration; a failure is recorded too, and gives undefined. */
  async step<T>(name: string, work: () => Promise<T>): Promise<T | undefined> {
    const t = performance.now()
    try {
      const value = await work()
      this.results.durations[name] = performance.now() - t
      this.log(`  ${name}: ${((performance.now() - t) / 1000).toFixed(1)} s`)
      return value
    } catch (err) {
      this.progress.stop()
      this.results.durations[name] = performance.now() - t
      const message = err instanceof Error ? err.message : String(err)
      this.results.errors.push(`${name}: ${message}`)
      this.log(`  ${name}: FAILED after ${((performance.now() - t) / 1000).toFixed(1)} s: ${message}`)
      return undefined
    }
  }

  /**
   * A quick run's budget starts again for a part of the bench (the ingestion scenarios start theirs
   * after the areas benched before them), so one part's time cannot starve the next.
   */
  startBudget(part: string): void {
    if (this.options.profile.name !== 'quick') return
    this.budgetEnd = performance.now() + QUICK_BUDGET_MS
    this.log(`  ${part}: ${QUICK_BUDGET_MS / 1000} s of quick time budget from now`)
  }

  /** Whether a scenario of about `ms` is to run: not skipped, and within a quick run's budget. */
  fits(name: string, ms: number): boolean {
    if (this.options.skip.has(name)) return false
    if (performance.now() + ms <= this.budgetEnd) return true
    this.results.skipped = { ...this.results.skipped, [name]: 'quick time budget used up' }
    this.log(`  ${name}: skipped (quick time budget used up)`)
    return false
  }
}
