/*
 * The shape in which a scenario hands its figures to the report (report.ts), which prints them
 * without knowing the scenario. This module imports nothing of the bench, so scenarios and the
 * report both depend on it and not on each other.
 *
 * Adding a scenario that runs on its own (like segmentation, push, campaigns, exports):
 * 1. its step stores its result, any JSON, under its name in `run.results.scenarios` (or nothing,
 *    when it did not run: a failure is recorded by `run.step`, a skip by `run.fits`);
 * 2. it exports a `ScenarioReporter` of that result: its figures (also when it did not run, each
 *    then `skipped` with the reason given) and its paragraph of report.md;
 * 3. bench/cli.ts runs the step and lists the reporter in REPORTERS, in the order of the report.
 */

export interface Target {
  op: '>=' | '<='
  value: number
}

/** One headline figure: printed at the end of a run, kept in results.json's `figures`, compared by --compare. */
export interface Figure {
  /** `<scenario>_<what>[_<unit>]`, with the data set's size when a quick run's differs (`push_ratio`, `export_log_200k_ratio`). */
  name: string
  value?: number
  unit: string
  target?: Target
  met?: boolean
  /** Extra words after the target (the overload's shed share and losses). */
  detail?: string
  /** Why there is no value (the scenario did not run, or measured nothing). */
  skipped?: string
}

/**
 * What the run measured end to end, for a scenario's figure that weighs its cost against the
 * ingestion it rides on (the rollup views' upkeep against the CPU of an event made queryable).
 */
export interface RunMeasures {
  /** CPU µs per event made queryable end to end (the costlier body kind), when the run measured it. */
  cpuUsPerEvent?: number
}

/** How the report reads a scenario's result (`R`: what its step stored in results.scenarios[name]). */
export interface ScenarioReporter<R> {
  /** The scenario's step, and its key in results.scenarios. */
  readonly name: string
  /**
   * Its figures. `result` is undefined when the step did not run or failed; `skipped` then says
   * why. `quick`: a --quick run (smaller data sets, figures named after them). `run`: what the run
   * measured end to end.
   */
  figures(result: R | undefined, skipped: string, quick: boolean, run: RunMeasures): Figure[]
  /** Its paragraph (a markdown list item) in report.md's "Scenarios", when it stored a result. */
  summary(result: R): string
}

export const meets = (value: number | undefined, target: Target) =>
  value !== undefined &&
  Number.isFinite(value) &&
  (target.op === '>=' ? value >= target.value : value <= target.value)
