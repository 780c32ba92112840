import { runEngineChild } from '../engine-child.ts'
import type { BenchRun } from '../bench-run.ts'
import type { Progress } from '../progress.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import { round } from '../stats.ts'

/** The audience: the 1,000,000 installs, and a tenth for --quick. */
export const CAMPAIGN_SETS = {
  full: { label: '1m', installs: 1_000_000 },
  quick: { label: '100k', installs: 100_000 },
} as const

export type CampaignResult =
  | { name: 'campaigns'; skipped: string }
  | {
      name: 'campaigns'
      skipped?: undefined
      set: string
      installs: number
      /** The push pipeline's broadcast to the same installs: 202 to the last delivery sent. */
      broadcastMs: number
      broadcastPerSecond: number
      /** Pushes of the campaign (the audience less its 10 % control group). */
      campaignPushes: number
      heldOut: number
      /** Scheduled moment to the last delivery sent. */
      campaignMs: number
      /** Scheduled moment to the occurrence planned (audience evaluated, every assignment written). */
      campaignPlanMs: number
      campaignPerSecond: number
      /** Campaign pushes/s ÷ broadcast pushes/s. */
      ratio: number
    }

export const CAMPAIGN_TARGETS = { ratio: { op: '>=', value: 0.8 } } as const

/**
 * Campaign execution at scale: an active push campaign to a 1,000,000-member audience with 2
 * creatives and a 10 % control group, from its scheduled moment to every push handed to the
 * transport (recorded sent by the file transport), against a broadcast of the same installs
 * through the push endpoint on the same Sluice. Runs in a child process with a Sluice of its own
 * (campaign-engine.ts), embedded mode.
 */
export async function campaignScenario(options: {
  quick: boolean
  progress: Progress
}): Promise<CampaignResult> {
  const set = options.quick ? CAMPAIGN_SETS.quick : CAMPAIGN_SETS.full
  const r = await runEngineChild<Omit<Extract<CampaignResult, { set: string }>, 'name' | 'set'>>({
    script: './campaign-engine.ts',
    args: [set.installs],
    label: `campaigns (${set.label})`,
    what: 'campaign engine',
    progress: options.progress,
  })
  return { name: 'campaigns', set: set.label, ...r }
}

export function campaignFigures(r: CampaignResult | undefined, skipped: string, quick: boolean): Figure[] {
  const label = quick ? CAMPAIGN_SETS.quick.label : CAMPAIGN_SETS.full.label
  const name = (what: string) => `campaign_${label}_${what}`
  if (!r || r.skipped !== undefined) {
    const why = r?.skipped ?? skipped
    return [
      { name: name('ms'), unit: 'ms', skipped: why },
      { name: name('vs_broadcast'), unit: '', skipped: why },
    ]
  }
  return [
    {
      name: name('ms'),
      unit: 'ms',
      value: Math.round(r.campaignMs),
      detail:
        `scheduled moment to the last of ${r.campaignPushes.toLocaleString('en-US')} pushes sent ` +
        `(${Math.round(r.campaignPerSecond)}/s; planned after ${Math.round(r.campaignPlanMs)} ms; ${r.heldOut.toLocaleString('en-US')} held out)`,
    },
    {
      name: name('vs_broadcast'),
      unit: '',
      value: round(r.ratio, 2),
      target: CAMPAIGN_TARGETS.ratio,
      met: r.ratio >= CAMPAIGN_TARGETS.ratio.value,
      detail: `campaign ${Math.round(r.campaignPerSecond)} pushes/s ÷ broadcast ${Math.round(r.broadcastPerSecond)} pushes/s (${r.installs.toLocaleString('en-US')} in ${Math.round(r.broadcastMs)} ms)`,
    },
  ]
}

export function campaignLine(r: CampaignResult): string {
  if (r.skipped !== undefined) return `- **campaigns**: skipped (${r.skipped}).`
  return (
    `- **campaigns** (${r.set}): ${r.campaignPushes} pushes (${r.heldOut} held out) in ${Math.round(r.campaignMs)} ms from the ` +
    `scheduled moment (planned after ${Math.round(r.campaignPlanMs)} ms), ${Math.round(r.campaignPerSecond)}/s; broadcast of ` +
    `${r.installs} in ${Math.round(r.broadcastMs)} ms, ${Math.round(r.broadcastPerSecond)}/s; ratio ${round(r.ratio, 2)}.`
  )
}

/** The bench step (before the baselines, like segmentation: it runs a Sluice of its own). */
export async function runCampaigns(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.campaigns = { name: 'campaigns', skipped: 'measured in embedded mode only' }
    return
  }
  if (!run.fits('campaigns', quick ? 120_000 : 1_200_000)) return
  const r = await run.step('campaigns', () => campaignScenario({ quick, progress: run.progress }))
  if (!r) return
  run.results.scenarios.campaigns = r
  if (r.skipped === undefined) run.log(`  ${campaignLine(r).slice(2)}`)
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const campaignReporter: ScenarioReporter<CampaignResult> = {
  name: 'campaigns',
  figures: campaignFigures,
  summary: campaignLine,
}
