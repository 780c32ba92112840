import { rmSync } from 'node:fs'
import { relative } from 'node:path'
import type { BenchRun } from './bench-run.ts'
import { cpuSnapshot, cpuUse } from './machine.ts'
import { buildFigures, formatFigure, writeResults, type BenchResults, type Reporters } from './report.ts'

/**
 * Ends a run: its results with their figures are written to the results directory, the data
 * directory removed (unless --keep-data), and the summary printed (the figures last). Gives `exitCode`.
 */
export function finishRun(run: BenchRun, exitCode: number, reporters: Reporters): number {
  run.progress.stop()
  const full = assembleResults(run, reporters)
  writeReport(run.outDir, full, reporters)
  if (!run.options.keepData) rmSync(run.workDir, { recursive: true, force: true })
  else run.log(`data kept in ${run.workDir}`)
  process.stdout.write(summary(run, full))
  return exitCode
}

/** The run's results, stamped with its end, its wall time and CPU use, and their figures. */
function assembleResults(run: BenchRun, reporters: Reporters): BenchResults {
  const { results } = run
  results.run.wallMs = performance.now() - run.wallStart
  results.run.finishedAt = new Date().toISOString()
  results.run.cpu = cpuUse(run.cpuStart, cpuSnapshot())
  return { ...results, figures: buildFigures(results, reporters) }
}

/** results.json, report.md and the charts; a run whose results cannot be written still ends. */
function writeReport(outDir: string, full: BenchResults, reporters: Reporters): void {
  try {
    writeResults(outDir, full, reporters)
  } catch (err) {
    process.stderr.write(`could not write results to ${outDir}: ${String(err)}\n`)
  }
}

function summary(run: BenchRun, full: BenchResults): string {
  const { machine, outDir } = run
  const cpu = full.run.cpu
  const lines = [
    '',
    `results: ${relative(process.cwd(), outDir) || outDir} (results.json, report.md, SVG charts)`,
    `wall time ${(full.run.wallMs! / 1000).toFixed(1)} s; ${full.run.mode}, ${full.run.profile}; noise: other processes used ${cpu ? cpu.other.toFixed(2) : 'n/a'} of ${machine.cores} cores on average (load average ${machine.loadAverage.join(' ')} at start)`,
  ]
  if (full.errors.length > 0) lines.push(`errors: ${full.errors.length} (see report.md)`)
  lines.push(...full.figures.map(formatFigure))
  return lines.join('\n') + '\n'
}
