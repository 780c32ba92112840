import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbSideConnection, paramText } from '../../pipelines/connectors/store/chdb-side-connection.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { tempDir } from '../helpers/temp.ts'

describe('a chdb side connection (where audience counts run in embedded mode)', () => {
  let store: ChdbStore
  let side: ChdbSideConnection
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('side')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path, 'side_db')
    side = await ChdbSideConnection.open(store)
  })
  afterAll(async () => {
    await side.close()
    await store.close()
    await cleanup()
  })

  it('passes every parameter as the engine would bind it, whatever its characters', async () => {
    const tricky = "a'b\\c\td\ne\r\u0000f é 🎉 \\' \\\\n {x:String}"
    const [row] = await side.query(
      'SELECT {s:String} AS s, {a:Array(String)} AS a, {n:Int64} AS n, {f:Float64} AS f, {u:UInt64} AS u, currentDatabase() AS db',
      { s: tricky, a: [tricky, '', "x'"], n: -1_700_000_000_000, f: 12.5, u: 3 },
    )
    expect(row).toEqual({
      s: tricky,
      a: [tricky, '', "x'"],
      n: -1_700_000_000_000,
      f: 12.5,
      u: 3,
      db: 'side_db',
    })
    // The same through the store's bound query: identical.
    const [bound] = await store.query('SELECT {s:String} AS s, {a:Array(String)} AS a', {
      s: tricky,
      a: [tricky],
    })
    expect(bound).toEqual({ s: tricky, a: [tricky] })
  })

  it('a long query on it does not hold up the store’s bound queries', async () => {
    const order: string[] = []
    const heavy = side
      .query('SELECT count() AS n FROM numbers({n:UInt64}) WHERE cityHash64(number) % 7 = 3', {
        n: 600_000_000,
      })
      .then(() => order.push('side heavy'))
    await store.query('SELECT {x:UInt8} AS x', { x: 1 }).then(() => order.push('bound quick'))
    await heavy
    expect(order).toEqual(['bound quick', 'side heavy'])
  })

  it('formats values as the HTTP interface takes them', () => {
    expect(paramText("it's")).toBe("it\\'s")
    expect(paramText(['a', "b'c"])).toBe("['a','b\\'c']")
    expect(paramText([1, 2.5])).toBe('[1,2.5]')
    expect(() => paramText(Number.NaN)).toThrow()
    expect(() => paramText({})).toThrow()
  })
})
