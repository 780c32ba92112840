import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  compileCounts,
  compileMembers,
  type AudienceContext,
} from '../../pipelines/audiences/compile-rules.ts'
import type { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { parseTargetRules, type TargetRules } from '../../schemas/audiences.ts'
import { insertAudienceData, queryCounts, queryMembers } from '../helpers/audience-data.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

// A static audience's list tests are driven from the smaller side (the list's identifiers, or the
// app's own: compile-rules.ts, staticMembership). Both cases, run in the embedded engine, must
// give exactly the installs the lists name: an app far smaller than its list, and an app far
// larger than its list.

const NOW = Date.parse('2026-06-01T12:00:00Z')
let store: ChdbStore
let cleanup: () => Promise<void>

beforeAll(async () => {
  ;({ store, cleanup } = await openMigratedChdb('audience-static-lists'))
})
afterAll(() => cleanup())

const ctxOf = (appId: string): AudienceContext => ({
  appId,
  appProfiledbId: 7001,
  orgProfiledbId: 7000,
  now: NOW,
})

function staticRules(lists: string[]): TargetRules {
  const parsed = parseTargetRules({ static: { lists } })
  if (!parsed.ok) throw new Error(parsed.issues[0]?.message)
  return parsed.rules
}

/** An install id of the app: apps of different name lengths never share one. */
const installOf = (appId: string, i: number) =>
  `00000000-0000-4000-8000-${appId.length}${String(i).padStart(11, '0')}`

/** `installs` installs of `appId`; install i belongs to customer `c<i>` (every 10th has none). */
async function seedApp(appId: string, installs: number) {
  await insertAudienceData(store, {
    devices: Array.from({ length: installs }, (_, i) => ({
      app_id: appId,
      install_uuid: installOf(appId, i),
      customer_id: i % 10 === 9 ? '' : `c${i}`,
      platform: i % 2 ? 'iOS' : 'Android',
      push_token: i % 3 ? `t${i}` : '',
      push_status: '',
      device_timezone: 'UTC',
    })),
    events: [],
    sessions: [],
    profiles: [],
    invalidPushTokens: [],
  })
}

async function seedList(appId: string, listId: string, idType: string, identifiers: string[]) {
  await store.insert(
    'audience_list_members',
    identifiers.map((identifier) => ({ app_id: appId, list_id: listId, id_type: idType, identifier })),
  )
}

async function members(appId: string, rules: TargetRules) {
  return (await queryMembers(store, compileMembers(rules, ctxOf(appId)))).map((m) => m.install_uuid)
}

describe('static audience lists, driven from the smaller side', () => {
  it('counts an app of 30 installs against lists of 3,000 identifiers exactly', async () => {
    const app = 'small-app'
    await seedApp(app, 30)
    // Customers c0..c2999 listed (c9, c19, c29 have no customer on their install), plus two
    // installs by id, one of them also listed by customer.
    await seedList(
      app,
      'big-customers',
      'customer_id',
      Array.from({ length: 3000 }, (_, i) => `c${i}`),
    )
    await seedList(app, 'big-installs', 'install_id', [
      installOf(app, 9),
      installOf(app, 4),
      ...Array.from({ length: 3000 }, (_, i) => installOf('other', i)),
    ])
    const byCustomer = staticRules(['big-customers'])
    const listedIndexes = Array.from({ length: 30 }, (_, i) => i).filter((i) => i % 10 !== 9)
    const expectedByCustomer = listedIndexes.map((i) => installOf(app, i)).sort()
    expect(await members(app, byCustomer)).toEqual(expectedByCustomer)
    expect(await queryCounts(store, compileCounts(byCustomer, ctxOf(app)))).toEqual({
      user_count: 27,
      // a token on installs i % 3 != 0: 27 listed less the 9 multiples of 3 among them
      has_push: 18,
      seen_last_thirty: 0,
    })
    const both = staticRules(['big-customers', 'big-installs'])
    expect(await members(app, both)).toEqual([...expectedByCustomer, installOf(app, 9)].sort())
    expect((await queryCounts(store, compileCounts(both, ctxOf(app)))).user_count).toBe(28)
    const installsOnly = staticRules(['big-installs'])
    expect(await members(app, installsOnly)).toEqual([installOf(app, 4), installOf(app, 9)].sort())
    expect((await queryCounts(store, compileCounts(installsOnly, ctxOf(app)))).user_count).toBe(2)
  })

  it('counts an app of 3,000 installs against lists of a few identifiers exactly', async () => {
    const app = 'big-app'
    await seedApp(app, 3000)
    // c5 and c2500 are the app's; c2509 is listed but its install has no customer; x1 is unknown.
    await seedList(app, 'small-customers', 'customer_id', ['c5', 'c2500', 'c2509', 'x1'])
    await seedList(app, 'small-installs', 'install_id', [installOf(app, 2999), installOf('other', 1)])
    const byCustomer = staticRules(['small-customers'])
    expect(await members(app, byCustomer)).toEqual([installOf(app, 5), installOf(app, 2500)].sort())
    expect(await queryCounts(store, compileCounts(byCustomer, ctxOf(app)))).toEqual({
      user_count: 2,
      // install 5 has a token (5 % 3 != 0), install 2500 too (2500 % 3 = 1)
      has_push: 2,
      seen_last_thirty: 0,
    })
    const both = staticRules(['small-customers', 'small-installs'])
    expect(await members(app, both)).toEqual(
      [installOf(app, 5), installOf(app, 2500), installOf(app, 2999)].sort(),
    )
    expect((await queryCounts(store, compileCounts(both, ctxOf(app)))).user_count).toBe(3)
  })
})
