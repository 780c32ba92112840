import type { Bus, BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { CommandClient, type CommandSender } from '../../services/control/command-client.ts'
import { encodeCommand } from '../../pipelines/control/commands.ts'
import { controlApplier } from '../../pipelines/control/control-applier.ts'
import { readResults } from '../../pipelines/control/control-results.ts'
import { ControlStore } from '../../services/control/control-store.ts'
import { CONTROL } from '../../services/control/control-plane.ts'
import type { ScheduledJob } from '../../pipelines/control/jobs.ts'
import type { TtlCacheOptions } from '../../services/control/ttl-cache.ts'
import { DeadLetterStore } from '../../pipelines/failures/dead-letters.ts'
import { guardStage } from '../../pipelines/failures/guarded-stage.ts'
import { topology } from '../../services/topology.ts'
import type { ControlCommand } from '../../services/control/control-plane.ts'

/**
 * The control plane as a worker runs it, over a given store and bus: the applier consuming the
 * control topic behind the failure guard, and a ControlStore whose writes go through the topic.
 */
export async function controlPlaneOver(
  store: Store,
  bus: Bus,
  options: { prefix?: string; keyCacheMs?: number; cache?: TtlCacheOptions; jobs?: ScheduledJob[] } = {},
) {
  const prefix = options.prefix ?? 'sluice.'
  const { topic, group } = topology(prefix, 1).stages.controlApplier
  const guarded = guardStage(controlApplier({ store, plane: CONTROL, jobs: options.jobs ?? [] }), {
    stage: 'control-applier',
    deadLetters: new DeadLetterStore(store),
  })
  const consumer = await bus.consume({
    group,
    topics: [topic],
    handler: guarded,
  })
  const commands = new CommandClient({ bus, store, topic, waitMs: 20_000 })
  return {
    control: new ControlStore(store, options.keyCacheMs ?? 0, options.cache ?? {}, commands),
    stop: () => consumer.stop(),
  }
}

/**
 * Control writes applied at once in this process by the real applier, without a bus: for tests
 * that only need tenants in a store and own it alone (so this process is the single owner).
 */
export function directCommands(store: Store, jobs: ScheduledJob[] = []): CommandSender {
  const apply = controlApplier({ store, plane: CONTROL, jobs })
  let tail: Promise<unknown> = Promise.resolve()
  let offset = 0
  const submitNow = async (command: ControlCommand) => {
    const record: BusRecord = {
      topic: 'direct-control',
      partition: 0,
      offset: String(offset++),
      key: null,
      value: encodeCommand(command).value,
      headers: {},
      timestamp: command.at,
    }
    await apply({ topic: record.topic, partition: 0, records: [record] })
    const result = (await readResults(store, [command.id])).get(command.id)
    if (!result?.applied) throw new Error(`command ${command.id} was not applied`)
    return { status: result.status, body: result.body }
  }
  return {
    submit(command) {
      const run = tail.then(() => submitNow(command))
      tail = run.catch(() => undefined)
      return run
    },
  }
}

/** A ControlStore over `store` whose writes `directCommands` applies. */
export const directControl = (store: Store, cacheTtlMs = 0, cache: TtlCacheOptions = {}) =>
  new ControlStore(store, cacheTtlMs, cache, directCommands(store))
