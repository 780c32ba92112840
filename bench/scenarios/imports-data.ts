import { createWriteStream } from 'node:fs'
import { once } from 'node:events'
import { createGzip } from 'node:zlib'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'

/**
 * The import scenario's data: `rows` org-level profiles of 20 attributes as a gzip CSV (the
 * header's `:date` and `:set` columns as docs/imports.md types them), and the engine's own
 * reading of the same file into `profiles` (the baseline), with the same JSON and types Sluice
 * stores. Deterministic: row n is the same in every run.
 */

const STRINGS = ['plan', 'city', 'country', 'language', 'segment', 'tier_name', 'source'] as const
const INTEGERS = ['score', 'visits', 'age', 'purchases', 'points', 'level'] as const
const DATES = ['signup', 'last_order', 'birthday'] as const
const SETS = ['tags', 'interests'] as const
/** 20 attributes: $email, 7 strings, 6 integers, 3 dates, 2 sets (plus customer_id). */
export const IMPORT_COLUMNS = [
  '$email',
  ...STRINGS,
  ...INTEGERS,
  ...DATES.map((d) => `${d}:date`),
  ...SETS.map((s) => `${s}:set`),
]

const PLANS = ['free', 'basic', 'gold', 'platinum']
const CITIES = ['Paris', 'Lyon', 'Berlin', 'Madrid', 'Rome', 'Lisbon', 'Oslo', 'Vienna']
const TAGS = ['vip', 'beta', 'churn-risk', 'newsletter', 'promo', 'android', 'ios']

export const importCustomer = (n: number) => `imp-${n}`

const pad = (n: number) => String(n).padStart(2, '0')
const date = (n: number, spread: number, base: number) => {
  const d = new Date(Date.UTC(base, 0, 1) + (n % spread) * 86_400_000)
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
}

/** Row n's cells, in IMPORT_COLUMNS order, customer_id first. */
export function importRow(n: number): string[] {
  return [
    importCustomer(n),
    `user${n}@example.com`,
    PLANS[n % 4]!,
    CITIES[n % 8]!,
    ['fr', 'de', 'es', 'it'][n % 4]!,
    ['fr', 'de', 'en'][n % 3]!,
    `seg-${n % 50}`,
    `tier ${n % 7}`,
    ['ads', 'organic', 'referral'][n % 3]!,
    String((n * 7919) % 100_000),
    String(n % 1000),
    String(18 + (n % 60)),
    String(n % 37),
    String((n * 31) % 50_000),
    String(n % 10),
    date(n, 2000, 2019),
    date(n * 13, 365, 2025),
    date(n * 7, 20_000, 1950),
    `${TAGS[n % 7]}|${TAGS[(n + 3) % 7]}`,
    `i${n % 11}|i${n % 13}|i${n % 17}`,
  ]
}

/** Writes the gzip CSV (header and `rows` rows) to `path`; returns its size in bytes. */
export async function writeImportCsv(path: string, rows: number): Promise<number> {
  let n = 0
  const source = Readable.from(
    (function* () {
      yield `customer_id,${IMPORT_COLUMNS.join(',')}\n`
      while (n < rows) {
        const lines: string[] = []
        for (let i = 0; i < 2000 && n < rows; i++, n++) lines.push(importRow(n).join(','))
        yield `${lines.join('\n')}\n`
      }
    })(),
  )
  const out = createWriteStream(path)
  const opened = once(out, 'open')
  await opened
  let bytes = 0
  const gzip = createGzip({ level: 6 })
  gzip.on('data', (c: Buffer) => (bytes += c.length))
  await pipeline(source, gzip, out)
  return bytes
}

/** A CSV of one customer_id column, the customers 0..rows-1: the audience import's body (gzip). */
export async function writeMembersCsv(path: string, rows: number): Promise<number> {
  let n = 0
  const source = Readable.from(
    (function* () {
      yield 'customer_id\n'
      while (n < rows) {
        const lines: string[] = []
        for (let i = 0; i < 5000 && n < rows; i++, n++) lines.push(importCustomer(n))
        yield `${lines.join('\n')}\n`
      }
    })(),
  )
  let bytes = 0
  const gzip = createGzip({ level: 6 })
  gzip.on('data', (c: Buffer) => (bytes += c.length))
  await pipeline(source, gzip, createWriteStream(path))
  return bytes
}

/**
 * The baseline: the engine reads the same gzip CSV itself (its CSV input format) and inserts the
 * rows into `profiles` as Sluice stores them: the attributes as the API's JSON (integers as
 * numbers, sets as arrays), their types, the lowercased e-mail. `path` is the bench's own file.
 */
export function baselineInsertSql(db: number, org: number, path: string): string {
  const names = ['customer_id', ...IMPORT_COLUMNS.map((c) => c.replace(/:\w+$/, ''))]
  const col = (name: string) => `c${names.indexOf(name)}`
  const structure = names.map((_, i) => `c${i} String`).join(', ')
  const json = names
    .slice(1)
    .map((name, i) => {
      const value = (INTEGERS as readonly string[]).includes(name)
        ? `toString(toInt64(${col(name)}))`
        : (SETS as readonly string[]).includes(name)
          ? `toJSONString(arrayDistinct(splitByChar('|', ${col(name)})))`
          : `toJSONString(${col(name)})`
      return `${i === 0 ? "'{" : "',"}${JSON.stringify(name)}:', ${value}`
    })
    .join(', ')
  const types = names
    .slice(1)
    .map((name) => {
      const type = (INTEGERS as readonly string[]).includes(name)
        ? 'integer'
        : (SETS as readonly string[]).includes(name)
          ? 'set'
          : (DATES as readonly string[]).includes(name)
            ? 'date'
            : 'string'
      return `'${name}', '${type}'`
    })
    .join(', ')
  return `INSERT INTO profiles (profiledb_id, org_id, app_id, customer_id, attributes, attribute_types, email,
                                deleted, updated_at, source_partition, source_offset, version)
          SELECT ${db}, ${org}, '', c0, concat(${json}, '}'), map(${types}), lower(${col('$email')}),
                 0, now64(3), 0, 0, 1
          FROM file('${path.replace(/[\\']/g, '\\$&')}', 'CSVWithNames', '${structure}')
          SETTINGS input_format_with_names_use_header = 0`
}
