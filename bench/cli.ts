import { BenchRun } from './bench-run.ts'
import { distributedIsolation, distributedReachable, startLocalServices } from './distributed.ts'
import { finishRun } from './finish.ts'
import { generateLoad } from './load.ts'
import { parseOptions, USAGE, type BenchOptions } from './options.ts'
import { compareReport, loadResults } from './report.ts'
import { runBaselines } from './run-baselines.ts'
import { runScenarios } from './run-scenarios.ts'
import { REPORTERS } from './reporters.ts'
import { runPush } from './scenarios/push.ts'
import { runSegmentation } from './scenarios/segmentation.ts'
import { runQuery } from './scenarios/query.ts'
import { runCampaigns } from './scenarios/campaigns.ts'
import { runExportBench } from './scenarios/exports.ts'
import { runImportBench } from './scenarios/imports.ts'
import { runDashboard } from './scenarios/dashboard.ts'

/**
 * `npm run bench`: the load is generated, the baselines measured, then the scenarios run against
 * Sluice; the results are written and the figures printed. Exit code 0 when every step completed,
 * 1 when one failed, 2 for bad options or unreachable services.
 */
async function main(argv: string[]): Promise<number> {
  const command = parseOptions(argv)
  switch (command.kind) {
    case 'help':
      process.stdout.write(USAGE)
      return 0
    case 'invalid':
      process.stderr.write(command.message)
      return 2
    case 'compare':
      process.stdout.write(
        compareReport(loadResults(command.a), loadResults(command.b), [command.a, command.b]),
      )
      return 0
  }
  const { options } = command
  let distributedEnv: Record<string, string> = {}
  const local = options.distributed ? await startLocalServices() : undefined
  if (local) process.stderr.write(`bench --distributed: started ${local.source}\n`)
  try {
    if (options.distributed) {
      const reach = await distributedReachable()
      if (!reach.ok) {
        process.stderr.write(`bench --distributed: ${reach.reason}\n`)
        return 2
      }
      distributedEnv = distributedIsolation()
    }
    return await runBench(options, distributedEnv, local?.enginePid)
  } finally {
    await local?.stop()
  }
}

async function runBench(
  options: BenchOptions,
  distributedEnv: Record<string, string>,
  enginePid: number | undefined,
): Promise<number> {
  const run = new BenchRun(options, distributedEnv, enginePid)
  const load = await generateLoad(run)
  if (load) {
    await runSegmentation(run)
    await runQuery(run)
    await runPush(run)
    await runCampaigns(run)
    await runExportBench(run)
    await runImportBench(run)
    // A minute of its own: the areas before it use up a quick run's budget on 2 cores.
    if (!options.skip.has('dashboard')) run.startBudget('dashboard')
    await runDashboard(run)
    run.startBudget('ingestion')
    if (!options.skip.has('baselines')) await runBaselines(run, load)
    await runScenarios(run, load)
  }
  // Every step that failed recorded an error.
  return finishRun(run, run.results.errors.length > 0 ? 1 : 0, REPORTERS)
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
