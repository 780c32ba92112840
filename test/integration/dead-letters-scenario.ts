import { expect } from 'vitest'
import { encodeBlock } from '../../pipelines/events/event-block.ts'
import { rowBinaryEventRow } from '../../pipelines/events/event-row.ts'
import type { StoredDeadLetter } from '../../pipelines/failures/dead-letters.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { eventRow } from '../helpers/event-rows.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import type { UploadRef } from '../../pipelines/events/writer-item.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/** One event block, as the upload splitter writes it onto the events topic. */
function block(app: string, uuid: string, eventName: string, tx: string): Buffer {
  const up: UploadRef = { tx, recv: Date.now(), org: 1, source: 'server' }
  return encodeBlock([
    { app, uuid, line: 1, upload: up, row: rowBinaryEventRow(eventRow(uuid, up, { app, eventName })) },
  ])
}

async function adminGet<T>(sluice: InProcessSluice, path: string): Promise<T> {
  const res = await documentedFetch(`${sluice.url}/admin/v1${path}`, {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  expect(res.status).toBe(200)
  return (await res.json()) as T
}

/**
 * Failure routing, the same in both modes: a record that can never be written (a block that does
 * not decode) and one whose failure we control (a constraint the engine enforces, then dropped: the
 * fix) are each dead-lettered with their stage and error; the valid records after them on the same
 * partition are stored; the partition is committed past them; the dead letters show in the admin
 * API and the metrics; a replay after the fix stores the controlled one.
 */
export async function runPoisonScenario(sluice: InProcessSluice, suffix: string) {
  const { bus, store, topology } = sluice.running.runtime
  const { topic: eventsTopic, group: writerGroup } = topology.stages.eventsWriter
  const app = `poison-app-${suffix}`
  const eventsOf = async () =>
    (
      await store.query<{ uuid: string; event_name: string }>(
        'SELECT uuid, event_name FROM events WHERE app_id = {app:String} ORDER BY uuid',
        { app },
      )
    ).map((r) => `${r.uuid}:${r.event_name}`)

  // 1. A block that does not decode, then a valid one, on one partition.
  await bus.produce(eventsTopic, [{ partition: 0, value: Buffer.from('not an event block\n') }])
  await bus.produce(eventsTopic, [{ partition: 0, value: block(app, 'u-1', 'valid', 'tx-1') }])
  await waitFor(eventsOf, (e) => e.includes('u-1:valid'), { what: 'the valid event after the poison' })
  // Dead letters are written once their batch is done, just after the valid events of the batch.
  const writerLetters = () => adminGet<StoredDeadLetter[]>(sluice, '/dead-letters?stage=events-writer')
  await waitFor(writerLetters, (list) => list.length === 1, { what: 'the undecodable block dead-lettered' })

  // 2. A block the engine refuses until an operator fixes something (here: drops a constraint).
  await store.command(`ALTER TABLE events ADD CONSTRAINT poison_test CHECK event_name != 'blocked'`)
  try {
    await bus.produce(eventsTopic, [{ partition: 0, value: block(app, 'u-2', 'blocked', 'tx-2') }])
    await bus.produce(eventsTopic, [{ partition: 0, value: block(app, 'u-3', 'valid', 'tx-3') }])
    await waitFor(eventsOf, (e) => e.includes('u-3:valid'), { what: 'the valid event after the refused one' })
  } finally {
    await store.command('ALTER TABLE events DROP CONSTRAINT poison_test')
  }
  expect(await eventsOf()).toEqual(['u-1:valid', 'u-3:valid'])
  await waitFor(writerLetters, (list) => list.length === 2, { what: 'the refused block dead-lettered' })

  // 3. A profile command that does not decode: the profile writer's dead letter.
  const profiles = topology.topics.profileChanges.topic
  await bus.produce(profiles, [{ key: 'k', value: Buffer.from('{"v":9}'), headers: { h: 'x' } }])

  // The partition moved on: everything produced is committed.
  await waitFor(
    () => bus.lag(writerGroup, eventsTopic),
    (lag) => lag === 0,
    { what: 'the events partition committed past the poison' },
  )

  const letters = await waitFor(
    () => adminGet<StoredDeadLetter[]>(sluice, '/dead-letters'),
    (list) => list.length === 3,
    { what: 'three dead letters' },
  )
  // Newest first.
  expect(letters.map((l) => l.stage)).toEqual(['profile-writer', 'events-writer', 'events-writer'])
  const [profileLetter, refused, undecodable] = letters as [
    StoredDeadLetter,
    StoredDeadLetter,
    StoredDeadLetter,
  ]
  expect(undecodable).toMatchObject({
    stage: 'events-writer',
    topic: eventsTopic,
    partition: 0,
    key: null,
    headers: {},
    attempts: 1,
    value: Buffer.from('not an event block\n').toString('base64'),
    value_bytes: 19,
    preview: 'not an event block\n',
    replayed_at: null,
  })
  expect(undecodable.id).toBe(`events-writer:${eventsTopic}:0:${undecodable.offset}`)
  expect(undecodable.error).toMatch(/^PermanentError: undecodable event block; caused by SyntaxError: /)
  expect(refused).toMatchObject({
    stage: 'events-writer',
    topic: eventsTopic,
    partition: 0,
    replayed_at: null,
  })
  expect(refused.error).toMatch(/Code: 469\b.*Constraint `poison_test`/)
  // Retried alone within the guard's bounds (3 attempts), then kept.
  expect(refused.attempts).toBe(3)
  expect(Number(refused.offset)).toBeGreaterThan(Number(undecodable.offset))
  expect(profileLetter).toMatchObject({
    stage: 'profile-writer',
    topic: profiles,
    key: 'k',
    headers: { h: 'x' },
    preview: '{"v":9}',
    error: 'PermanentError: undecodable profile command: unknown record version 9',
  })

  // ?stage= filters; limit bounds.
  const writerOnly = await adminGet<StoredDeadLetter[]>(sluice, '/dead-letters?stage=events-writer&limit=1')
  expect(writerOnly.map((l) => l.id)).toEqual([refused.id])
  expect(await adminGet<StoredDeadLetter>(sluice, `/dead-letters/${refused.id}`)).toMatchObject({
    id: refused.id,
    value: refused.value,
  })

  // Metrics count them per stage.
  const metrics = await (await documentedFetch(`${sluice.url}/metrics`)).text()
  expect(metrics).toMatch(/sluice_dead_letters_total\{stage="events-writer"\} 2\b/)
  expect(metrics).toMatch(/sluice_dead_letters_total\{stage="profile-writer"\} 1\b/)

  // 4. After the fix, a replay puts the refused block back on its partition, and it is stored.
  const res = await documentedFetch(`${sluice.url}/admin/v1/dead-letters/${refused.id}/replay`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  expect(res.status).toBe(202)
  expect(await res.json()).toMatchObject({
    id: refused.id,
    topic: eventsTopic,
    partition: 0,
    key: null,
    value_bytes: refused.value_bytes,
  })
  await waitFor(eventsOf, (e) => e.includes('u-2:blocked'), { what: 'the replayed event' })
  expect(await eventsOf()).toEqual(['u-1:valid', 'u-2:blocked', 'u-3:valid'])
  const after = await adminGet<StoredDeadLetter>(sluice, `/dead-letters/${refused.id}`)
  expect(after.replayed_at).not.toBeNull()

  // Unknown ids and bad queries.
  const missing = await documentedFetch(`${sluice.url}/admin/v1/dead-letters/nope/replay`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  expect(missing.status).toBe(404)
  const bad = await documentedFetch(`${sluice.url}/admin/v1/dead-letters?limit=0`, {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  expect(bad.status).toBe(400)
  expect((await documentedFetch(`${sluice.url}/admin/v1/dead-letters`)).status).toBe(401)
}
