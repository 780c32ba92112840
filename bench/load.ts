import type { BenchRun } from './bench-run.ts'
import {
  gzipBodies,
  makeCustomers,
  plainTemplates,
  profilePatchBodies,
  sdkBodies,
  UuidSpace,
  type Customer,
  type BodyInstance,
  type PlainTemplate,
} from './generate.ts'
import { deriveSeed, hex, mulberry32 } from './prng.ts'

/** The scenarios that send server-side events, each to an app and a uuid space of its own. */
type EventLoad = 'plain' | 'gzip' | 'fresh' | 'overload' | 'sustained'

/** Everything the bench sends, generated before any timing. */
export interface BenchLoad {
  /** 8 hex digits of the run (from the seed), in app names, the tenant and event uuids. */
  run8: string
  apps: Record<EventLoad, string>
  spaces: Record<EventLoad, UuidSpace>
  customers: readonly Customer[]
  sdk: (ReturnType<typeof sdkBodies>[number] & { app: string })[]
  plain: Record<'plain' | 'fresh' | 'overload', PlainTemplate[]>
  gzip: ReturnType<typeof gzipBodies>
  /** The sustained scenario's gzip bodies (none when it does not run). */
  sustained: BodyInstance[]
  profileBodies: ReturnType<typeof profilePatchBodies>
}

/** Generates the load (the `generate` step) and records its sizes; undefined when it failed. */
export async function generateLoad(run: BenchRun): Promise<BenchLoad | undefined> {
  const { seed, profile } = run.options
  const run8 = hex(mulberry32(deriveSeed(seed, 'run')), 8)
  const apps = {
    plain: `bench-plain-${run8}`,
    gzip: `bench-gzip-${run8}`,
    fresh: `bench-fresh-${run8}`,
    overload: `bench-overload-${run8}`,
    sustained: `bench-sustained-${run8}`,
  }
  const spaces = {
    plain: new UuidSpace(run8, '0001'),
    gzip: new UuidSpace(run8, '0002'),
    fresh: new UuidSpace(run8, '0003'),
    overload: new UuidSpace(run8, '0004'),
    sustained: new UuidSpace(run8, '0005'),
  }
  const now = Date.now()
  // A skipped sustained scenario needs none of its 10M events (minutes of generation on 2 cores).
  const sustainedEvents = run.options.skip.has('sustained') ? 0 : profile.sustainedEvents
  const generated = await run.step('generate', async () => {
    const customers = makeCustomers(seed, profile.customers)
    // Devices for every app that gets server-side events (the sustained one only if it runs).
    const withDevices = Object.values(apps).filter((app) => app !== apps.sustained || sustainedEvents > 0)
    const sdk = withDevices.flatMap((app) =>
      sdkBodies(seed, app, customers, 100, now).map((b) => ({ app, ...b })),
    )
    const templates = (app: string, space: UuidSpace) =>
      plainTemplates({
        seed,
        app,
        customers,
        space,
        count: profile.plainTemplates,
        eventsPerBody: profile.eventsPerPlainBody,
        now,
      })
    const plain = {
      plain: templates(apps.plain, spaces.plain),
      fresh: templates(apps.fresh, spaces.fresh),
      overload: templates(apps.overload, spaces.overload),
    }
    run.progress.start('generate', () => 'gzip bodies')
    const gzip = gzipBodies({
      seed,
      app: apps.gzip,
      customers,
      space: spaces.gzip,
      count: profile.gzipBodies,
      now,
    })
    // Enough bodies of ~7,400 lines for the sustained scenario's events: ~2.4 % of the lines are
    // copies or invalid, hence 4 % more.
    const sustainedBodies =
      sustainedEvents > 0 ? Math.ceil((sustainedEvents * 1.04) / (gzipEvents(gzip) || 7000)) : 0
    run.progress.update(() => `sustained gzip bodies (${sustainedBodies})`)
    const sustained = gzipBodies({
      seed,
      app: apps.sustained,
      customers,
      space: spaces.sustained,
      count: sustainedBodies,
      now,
      rows: false,
    }).map((x) => x.instance)
    run.progress.stop()
    return { customers, sdk, plain, gzip, sustained, profileBodies: profilePatchBodies(seed, 512) }
  })
  if (!generated) return undefined
  const { customers, plain, gzip } = generated
  const g = (run.results.generation = {
    ms: run.results.durations.generate ?? 0,
    plainBodyBytes: Math.round(average(plain.plain.map((t) => t.buffer.length))),
    gzipBodyBytes: Math.round(average(gzip.map((x) => x.instance.body.length))),
    gzipEvents: Math.round(average(gzip.map((x) => x.instance.events))),
    gzipInflatedBytes: Math.round(average(gzip.map((x) => x.inflatedBytes))),
  })
  run.log(
    `  load: ${customers.length} customers; plain bodies ${profile.eventsPerPlainBody} events, ${Math.round(g.plainBodyBytes / 1024)} KB; ` +
      `gzip bodies ${g.gzipEvents} events, ${Math.round(g.gzipBodyBytes / 1024)} KB (${(g.gzipInflatedBytes / 1048576).toFixed(1)} MB inflated, ${Math.round(g.gzipInflatedBytes / g.gzipEvents)} B/event)`,
  )
  return { run8, apps, spaces, ...generated }
}

/** Valid and invalid lines per gzip body, on average. */
function gzipEvents(gzip: readonly { instance: BodyInstance }[]): number {
  return average(gzip.map((x) => x.instance.events))
}

function average(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
}
