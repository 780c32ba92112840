import { describe, expect, it } from 'vitest'
import { PlainLines, RoundCustomers } from '../../pipelines/imports/round-memory.ts'

describe('import round memory', () => {
  it('holds every customer added (past its first table size), few it was not given, none after clear', () => {
    const customers = new RoundCustomers()
    const ids = Array.from({ length: 100_000 }, (_, i) => `customer-${i}-é`)
    for (const id of ids) {
      customers.add(id)
    }
    // Never a customer missed: a round's second row of a customer always starts a new round.
    expect(ids.filter((id) => !customers.has(id))).toEqual([])
    // Ids it was not given may hash as held ones (a new round early): rare at 32 bits.
    const strangers = Array.from({ length: 100_000 }, (_, i) => `stranger-${i}`)
    expect(strangers.filter((id) => customers.has(id)).length).toBeLessThan(20)
    customers.clear()
    expect(ids.filter((id) => customers.has(id))).toEqual([])
    customers.add('again')
    expect(customers.has('again')).toBe(true)
    expect(customers.has('')).toBe(false)
    customers.add('')
    expect(customers.has('')).toBe(true)
  })

  it('keeps each plain line’s number, block and place, past its first size and after clear', () => {
    const lines = new PlainLines()
    for (let i = 0; i < 5000; i++) lines.push(2 ** 40 + i, i % 7, i * 10, i * 10 + 9)
    expect(lines.length).toBe(5000)
    expect([lines.line(4999), lines.block(4999), lines.start(4999), lines.end(4999)]).toEqual([
      2 ** 40 + 4999,
      4999 % 7,
      49_990,
      49_999,
    ])
    expect([lines.line(0), lines.block(0), lines.start(0), lines.end(0)]).toEqual([2 ** 40, 0, 0, 9])
    lines.clear()
    expect(lines.length).toBe(0)
    lines.push(3, 1, 5, 8)
    expect([lines.length, lines.line(0), lines.block(0), lines.start(0), lines.end(0)]).toEqual([
      1, 3, 1, 5, 8,
    ])
  })
})
