import { parseArgs } from 'node:util'
import { DISTRIBUTED_QUICK, PROFILES, type BenchProfile } from './scenarios/context.ts'

/** The steps `--skip` names, in the order a run takes them. */
const STEPS = [
  'segmentation',
  'query',
  'push',
  'campaigns',
  'exports',
  'imports',
  'dashboard',
  'baselines',
  'edge',
  'sdk',
  'plain',
  'gzip',
  'freshness',
  'profiles',
  'overload',
  'sustained',
  'storage',
]
/** Steps whose events must be stored (they count them, or wait for them): sdk-sessions registers their customers' devices. */
const NEEDS_SDK_DEVICES = ['plain', 'gzip', 'freshness', 'overload', 'sustained']

export const USAGE = `usage: npm run bench [-- options]

  (no option)            the full suite against an embedded Sluice started by the bench
  --quick                a short run (under 3 minutes on a 2-core machine)
  --distributed          against Kafka + ClickHouse (KAFKA_BROKERS, CLICKHOUSE_URL; neither set: a mock cluster and the chdb stand-in)
  --seed N               seed of the generated load (default 1)
  --out DIR              results directory (default bench/results/<timestamp>)
  --skip LIST            skip steps: ${STEPS.join(',')}
                         (sdk only with ${NEEDS_SDK_DEVICES.join(',')}: their events need its devices)
  --sustained N          events of the sustained scenario (default: 10000000 full, 0 quick)
  --keep-data            keep the benched Sluice's data directory
  --cpu-prof             profile the Sluice processes (every thread) into <results>/profiles/{edge,main}
  --compare A B          print a side-by-side table of two results directories and exit
`

/** How a bench run goes, from its options. */
export interface BenchOptions {
  profile: BenchProfile
  distributed: boolean
  seed: number
  /** Results directory; bench/results/<run id> when absent. */
  out: string | undefined
  skip: ReadonlySet<string>
  keepData: boolean
  cpuProf: boolean
}

/** What the command line asks for; `invalid` carries the message for stderr (exit code 2). */
export type BenchCommand =
  | { kind: 'help' }
  | { kind: 'compare'; a: string; b: string }
  | { kind: 'invalid'; message: string }
  | { kind: 'run'; options: BenchOptions }

/** Reads the command line; an unknown option throws (parseArgs). */
export function parseOptions(argv: string[]): BenchCommand {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      distributed: { type: 'boolean', default: false },
      seed: { type: 'string', default: '1' },
      out: { type: 'string' },
      skip: { type: 'string', default: '' },
      sustained: { type: 'string' },
      'keep-data': { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      compare: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) return { kind: 'help' }
  if (values.compare) {
    const [a, b] = positionals
    if (!a || !b) return { kind: 'invalid', message: `--compare needs two results directories\n\n${USAGE}` }
    return { kind: 'compare', a, b }
  }
  const skip = new Set(
    values.skip
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  const unknown = [...skip].filter((step) => !STEPS.includes(step))
  if (unknown.length > 0)
    return { kind: 'invalid', message: `--skip: no step ${unknown.join(', ')}; steps: ${STEPS.join(',')}\n` }
  // Their events are attributed to the devices sdk-sessions registers: without them every event is
  // rejected (unknown_customer) and the scenarios would wait for stored events that never come.
  const needDevices = NEEDS_SDK_DEVICES.filter((step) => !skip.has(step))
  if (skip.has('sdk') && needDevices.length > 0)
    return {
      kind: 'invalid',
      message: `--skip sdk: ${needDevices.join(', ')} need the devices sdk-sessions registers; skip them too, or keep sdk\n`,
    }
  const seed = Number(values.seed)
  if (!Number.isInteger(seed)) return { kind: 'invalid', message: `--seed must be an integer\n` }
  const profile =
    values.quick && values.distributed ? DISTRIBUTED_QUICK : PROFILES[values.quick ? 'quick' : 'full']
  const sustainedEvents = values.sustained === undefined ? profile.sustainedEvents : Number(values.sustained)
  if (!Number.isInteger(sustainedEvents) || sustainedEvents < 0)
    return { kind: 'invalid', message: `--sustained must be a number of events (0 or more)\n` }
  return {
    kind: 'run',
    options: {
      profile: { ...profile, sustainedEvents },
      distributed: values.distributed,
      seed,
      out: values.out,
      skip,
      keepData: values['keep-data'],
      cpuProf: values['cpu-prof'],
    },
  }
}
