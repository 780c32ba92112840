import { gzipSync } from 'node:zlib'
import { deriveSeed, hex, int, mulberry32, pick, weighted, type Random } from './prng.ts'

/**
 * The bench's load, generated from a seed: customers with devices (built by SDK sessions), then
 * server-side upload bodies of events with a realistic attribute mix and a share of duplicates and
 * bad lines, and profile PATCH bodies of both syntaxes. Bodies are generated before any timing;
 * plain bodies are templates whose uuids are patched in place per send (a fixed-length counter),
 * so the load generator never becomes the bottleneck.
 */

export const SCHEMA_URL = 'https://sluice.example/schemas/events/v0.json'
/** Sluice answers 413 at or above 256 KB. */
export const MAX_BODY_BYTES = 256 * 1024
/** Gzip bodies are filled up to here (a little margin under the limit). */
export const GZIP_FILL_BYTES = MAX_BODY_BYTES - 512

export interface Customer {
  id: string
  install: string
  device: string
  session: string
  country: string
  language: string
  model: string
  platform: string
  appVersion: string
  osVersion: string
  timezone: string
}

const DEVICES: readonly (readonly [{ platform: string; model: string; os: readonly string[] }, number])[] = [
  [{ platform: 'iOS', model: 'iPhone15,2', os: ['17.1', '17.4', '18.0'] }, 20],
  [{ platform: 'iOS', model: 'iPhone14,5', os: ['16.6', '17.1', '17.4'] }, 15],
  [{ platform: 'iOS', model: 'iPad13,1', os: ['16.6', '17.4'] }, 5],
  [{ platform: 'Android', model: 'SM-S911B', os: ['13', '14'] }, 15],
  [{ platform: 'Android', model: 'Pixel 8', os: ['14', '15'] }, 10],
  [{ platform: 'Android', model: 'Redmi Note 12', os: ['12', '13'] }, 12],
  [{ platform: 'Android', model: 'SM-A546E', os: ['13', '14'] }, 10],
]
const GEO: readonly (readonly [{ country: string; language: string; tz: string }, number])[] = [
  [{ country: 'us', language: 'en', tz: 'America/New_York' }, 25],
  [{ country: 'us', language: 'es', tz: 'America/Los_Angeles' }, 6],
  [{ country: 'gb', language: 'en', tz: 'Europe/London' }, 8],
  [{ country: 'de', language: 'de', tz: 'Europe/Berlin' }, 8],
  [{ country: 'fr', language: 'fr', tz: 'Europe/Paris' }, 7],
  [{ country: 'br', language: 'pt', tz: 'America/Sao_Paulo' }, 9],
  [{ country: 'in', language: 'hi', tz: 'Asia/Kolkata' }, 12],
  [{ country: 'jp', language: 'ja', tz: 'Asia/Tokyo' }, 6],
  [{ country: 'id', language: 'id', tz: 'Asia/Jakarta' }, 5],
]
const APP_VERSIONS: readonly (readonly [string, number])[] = [
  ['3.2.0', 40],
  ['3.1.4', 30],
  ['3.0.9', 15],
  ['2.9.1', 10],
  ['2.7.0', 5],
]

/** Customers with one device each; the same for the same seed. */
export function makeCustomers(seed: number, count: number): Customer[] {
  const random = mulberry32(deriveSeed(seed, 'customers'))
  const customers: Customer[] = []
  for (let i = 0; i < count; i++) {
    const device = weighted(random, DEVICES)
    const geo = weighted(random, GEO)
    customers.push({
      id: `c_${hex(random, 10)}`,
      install: uuidFrom(random),
      device: uuidFrom(random),
      session: uuidFrom(random),
      country: geo.country,
      language: geo.language,
      model: device.model,
      platform: device.platform,
      appVersion: weighted(random, APP_VERSIONS),
      osVersion: pick(random, device.os),
      timezone: geo.tz,
    })
  }
  return customers
}

export function uuidFrom(random: Random): string {
  const h = hex(random, 32)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`
}

/**
 * SDK uploads for one app: per customer a session start (with every dimension), a few events and a
 * close, `perBody` customers per body. What builds the devices server-side events are attributed to.
 */
export function sdkBodies(
  seed: number,
  appKey: string,
  customers: readonly Customer[],
  perBody: number,
  now: number,
) {
  const random = mulberry32(deriveSeed(seed, `sdk:${appKey}`))
  const bodies: { body: Buffer; rows: number }[] = []
  for (let start = 0; start < customers.length; start += perBody) {
    const rows: string[] = []
    for (const c of customers.slice(start, start + perBody)) {
      const at = now - int(random, 10 * 60_000, 6 * 3_600_000)
      const base = { install_uuid: c.install, session_uuid: c.session, customer_ids: { customer_id: c.id } }
      rows.push(
        JSON.stringify({
          type: 's',
          uuid: uuidFrom(random),
          ...base,
          device_uuid: c.device,
          at_millis: at,
          app_ver: c.appVersion,
          os_ver: c.osVersion,
          platform: c.platform,
          model: c.model,
          country: c.country,
          language: c.language,
          device_timezone: c.timezone,
          push_token: hex(random, 64),
          push_status: weighted(random, [
            ['Enabled (Prominent)', 6],
            ['Enabled (Provisional)', 1],
            ['Disabled', 3],
          ] as const),
          library_ver: 'sluice-sdk-6.1.0',
          nth: int(random, 1, 400),
          device_new: random() < 0.05,
        }),
      )
      const events = int(random, 0, 2)
      for (let e = 0; e < events; e++) {
        rows.push(
          JSON.stringify({
            type: 'e',
            uuid: uuidFrom(random),
            ...base,
            at_millis: at + (e + 1) * int(random, 1_000, 60_000),
            name: pick(random, ['Screen Viewed', 'App Opened', 'Item Viewed', 'Search']),
            attributes: { screen: pick(random, ['home', 'catalog', 'cart', 'profile', 'settings']) },
          }),
        )
      }
      rows.push(
        JSON.stringify({
          type: 'c',
          uuid: uuidFrom(random),
          ...base,
          at_millis: at + int(random, 60_000, 1_800_000),
        }),
      )
    }
    bodies.push({ body: Buffer.from(rows.join('\n') + '\n'), rows: rows.length })
  }
  return bodies
}

// --- Server-side events --------------------------------------------------------------------------

type AttributeMaker = (r: Random) => Record<string, string | number>
const SKUS = Array.from({ length: 400 }, (_, i) => `SKU-${(10_000 + i * 37).toString(36).toUpperCase()}`)
const EVENT_KINDS: readonly (readonly [
  { name: string; attributes: AttributeMaker; ltv?: (r: Random) => number },
  number,
])[] = [
  [
    {
      name: 'Screen Viewed',
      attributes: (r) => ({
        screen: pick(r, [
          'home',
          'catalog',
          'product_detail',
          'cart',
          'checkout',
          'profile',
          'search_results',
        ]),
        referrer: pick(r, ['push', 'deeplink', 'organic', 'inapp', 'email']),
        duration_ms: int(r, 200, 120_000),
      }),
    },
    30,
  ],
  [
    {
      name: 'Item Viewed',
      attributes: (r) => ({
        sku: pick(r, SKUS),
        category: pick(r, ['shoes', 'outerwear', 'accessories', 'kids', 'home & living', 'électronique']),
        price: (int(r, 199, 49_999) / 100).toFixed(2),
        currency: pick(r, ['USD', 'EUR', 'GBP', 'BRL', 'INR']),
        position: int(r, 1, 60),
      }),
    },
    20,
  ],
  [
    {
      name: 'Added To Cart',
      attributes: (r) => ({
        sku: pick(r, SKUS),
        quantity: int(r, 1, 4),
        price: (int(r, 199, 49_999) / 100).toFixed(2),
        currency: pick(r, ['USD', 'EUR', 'GBP']),
      }),
    },
    10,
  ],
  [
    {
      name: 'Purchase Completed',
      attributes: (r) => ({
        order_id: `ord-${hex(r, 12)}`,
        items: int(r, 1, 6),
        payment_method: pick(r, ['card', 'apple_pay', 'google_pay', 'paypal', 'pix', 'upi']),
        coupon: r() < 0.3 ? `SAVE${int(r, 5, 30)}` : 'none',
        shipping: pick(r, ['standard', 'express', 'pickup']),
        first_purchase: r() < 0.15 ? 'yes' : 'no',
      }),
      ltv: (r) => int(r, 499, 25_000),
    },
    5,
  ],
  [
    {
      name: 'Search',
      attributes: (r) => ({
        query: pick(r, [
          'running shoes',
          'rain jacket',
          'gift for mum',
          'sneakers 42',
          'winter sale',
          'café table',
        ]),
        results: int(r, 0, 480),
      }),
    },
    12,
  ],
  [
    {
      name: 'Level Completed',
      attributes: (r) => ({ level: int(r, 1, 300), score: int(r, 0, 1_000_000), time_s: int(r, 10, 900) }),
    },
    8,
  ],
  [
    { name: 'Push Opened', attributes: (r) => ({ campaign_id: String(int(r, 1000, 1400)), action: 'open' }) },
    8,
  ],
  [
    {
      name: 'Subscription Renewed',
      attributes: (r) => ({ plan: pick(r, ['monthly', 'annual']), trial: r() < 0.2 ? 'true' : 'false' }),
      ltv: (r) => pick(r, [499, 999, 4999, 9999]),
    },
    3,
  ],
  [{ name: 'Logout', attributes: () => ({}) }, 4],
]

/**
 * What each line of a body is, for the accounting of what must be stored. DupInBody repeats a
 * uuid earlier in the same body (`duplicate_in_body`); DupPrevious repeats a uuid of the previous
 * body of the same stream (`duplicate`, or the first copy if that body was refused); Invalid is a
 * line Sluice rejects (event_time out of window, missing customer_id).
 */
export const LineKind = { Fresh: 0, DupInBody: 1, DupPrevious: 2, Invalid: 3 } as const
export type LineKind = (typeof LineKind)[keyof typeof LineKind]

export interface LoadMix {
  dupInBody: number
  dupPrevious: number
  invalid: number
}
export const DEFAULT_MIX: LoadMix = { dupInBody: 0.005, dupPrevious: 0.015, invalid: 0.004 }

/**
 * Event uuids of one scenario: `<run 8 hex>-<scenario 4 hex>-4000-8000-<12 hex>`, the last part a
 * 48-bit permutation of the counter, so a stored uuid maps back to its counter and each
 * scenario's events are told apart. The spec asks senders for randomly generated uuids: in the
 * order of the dedupe index (app, uuid) consecutive events land far apart, as random uuids do
 * (a plain counter would sort them next to each other and let every look-up prune the index to a
 * few granules, which no real sender gets).
 */
export class UuidSpace {
  readonly prefix: string
  private next = 0

  constructor(run8: string, scenario4: string) {
    if (!/^[0-9a-f]{8}$/.test(run8) || !/^[0-9a-f]{4}$/.test(scenario4)) throw new Error('bad uuid space')
    this.prefix = `${run8}-${scenario4}-4000-8000-`
  }

  /** Reserve `n` counters; returns the first. */
  take(n: number): number {
    const first = this.next
    this.next += n
    return first
  }

  get used(): number {
    return this.next
  }

  format(counter: number): string {
    return this.prefix + scrambleCounter(counter).toString(16).padStart(12, '0')
  }

  parse(uuid: string): number | undefined {
    if (uuid.length !== 36 || !uuid.startsWith(this.prefix)) return undefined
    const n = Number.parseInt(uuid.slice(24), 16)
    return Number.isFinite(n) ? unscrambleCounter(n) : undefined
  }
}

// A bijection of 48-bit integers: multiply by an odd constant, fold the high half into the low
// half, multiply again (each step is invertible modulo 2^48). Plain bodies are patched with it per
// send, so it stays in doubles: every partial product below is under 2^53.
const P24 = 2 ** 24
const P48 = 2 ** 48
function mul48(a: number, b: number): number {
  const aLow = a % P24
  const aHigh = (a - aLow) / P24
  const bLow = b % P24
  const bHigh = (b - bLow) / P24
  const cross = (aHigh * bLow + aLow * bHigh) % P24
  return (aLow * bLow + cross * P24) % P48
}
function fold(x: number): number {
  const low = x % P24
  const high = (x - low) / P24
  return high * P24 + (low ^ high)
}
function inverse48(a: number): number {
  let x = a // Newton's iteration modulo 2^48: each step doubles the number of correct low bits
  for (let i = 0; i < 6; i++) x = mul48(x, (2 - (mul48(a, x) % P48) + P48) % P48)
  return x
}
const MUL_A = 0x5deece66d
const MUL_B = 0x9e3779b97f4b
const INV_A = inverse48(MUL_A)
const INV_B = inverse48(MUL_B)

export const scrambleCounter = (counter: number): number => mul48(fold(mul48(counter, MUL_A)), MUL_B)
export const unscrambleCounter = (value: number): number => mul48(fold(mul48(value, INV_B)), INV_A)

const HEX = Buffer.from('0123456789abcdef')
/** Write `counter`'s uuid tail (its 48-bit permutation, 12 lowercase hex digits) at `offset`. */
export function writeCounter(buf: Buffer, offset: number, counter: number): void {
  let n = scrambleCounter(counter)
  for (let i = 11; i >= 0; i--) {
    buf[offset + i] = HEX[n % 16]!
    n = Math.floor(n / 16)
  }
}

interface GeneratedLine {
  kind: LineKind
  /** For duplicates: the index of the line (this body) or of the fresh uuid (previous body) repeated. */
  of: number
  event: Record<string, unknown>
  customer: Customer
}

function makeLines(
  random: Random,
  app: string,
  customers: readonly Customer[],
  count: number,
  now: number,
  mix: LoadMix,
) {
  const lines: GeneratedLine[] = []
  const fresh: number[] = []
  for (let i = 0; i < count; i++) {
    const customer = pick(random, customers)
    const kind = weighted(random, EVENT_KINDS)
    const attributes = kind.attributes(random)
    const event: Record<string, unknown> = {
      schema_url: SCHEMA_URL,
      app_uuid: app,
      customer_id: customer.id,
      event_name: kind.name,
      event_time: now - int(random, 0, 3_600_000),
      uuid: '',
    }
    if (Object.keys(attributes).length > 0) event.attributes = attributes
    if (kind.ltv) event.ltv_change = kind.ltv(random)
    const r = random()
    let lineKind: LineKind = LineKind.Fresh
    let of = 0
    if (fresh.length > 0 && r < mix.dupInBody) {
      lineKind = LineKind.DupInBody
      of = pick(random, fresh)
      // A copy is the same event again (a sender's retry), not a different event with the same uuid.
      Object.assign(event, lines[of]!.event)
    } else if (r < mix.dupInBody + mix.dupPrevious) {
      lineKind = LineKind.DupPrevious
      of = int(random, 0, 99)
    } else if (r < mix.dupInBody + mix.dupPrevious + mix.invalid) {
      lineKind = LineKind.Invalid
      if (random() < 0.5) event.event_time = now - 80 * 3_600_000
      else delete event.customer_id
    }
    if (lineKind === LineKind.Fresh) fresh.push(i)
    lines.push({ kind: lineKind, of, event, customer })
  }
  return lines
}

/**
 * A plain body whose uuids are patched per send. `uuidOffsets[i]` is the byte offset of line i's
 * 12-digit counter; `kinds[i]` and `of[i]` say which counter it gets.
 */
export interface PlainTemplate {
  buffer: Buffer
  kinds: Uint8Array
  of: Uint32Array
  uuidOffsets: Uint32Array
  /** Each line's slot among the counters a send reserves (every line but DupInBody has one). */
  slots: Uint32Array
  /** Counters a send reserves. */
  freshCount: number
  /** The events, as rows of the `events` table (valid, first copies only): the storage baseline's input. */
  rows: Buffer
}

/** An instantiated body: the bytes, and each line's uuid counter and kind. */
export interface BodyInstance {
  body: Buffer
  counters: Float64Array
  kinds: Uint8Array
  events: number
}

export function plainTemplates(options: {
  seed: number
  app: string
  customers: readonly Customer[]
  space: UuidSpace
  count: number
  eventsPerBody: number
  now: number
  mix?: LoadMix
}): PlainTemplate[] {
  const random = mulberry32(deriveSeed(options.seed, `plain:${options.app}`))
  const placeholder = options.space.format(0)
  const templates: PlainTemplate[] = []
  for (let t = 0; t < options.count; t++) {
    const lines = makeLines(
      random,
      options.app,
      options.customers,
      options.eventsPerBody,
      options.now,
      options.mix ?? DEFAULT_MIX,
    )
    const parts: Buffer[] = []
    const offsets = new Uint32Array(lines.length)
    let offset = 0
    let fresh = 0
    const slots = new Uint32Array(lines.length)
    lines.forEach((line, i) => {
      if (line.kind !== LineKind.DupInBody) slots[i] = fresh++
      const text = Buffer.from(JSON.stringify({ ...line.event, uuid: placeholder }) + '\n')
      const at = text.indexOf(placeholder)
      offsets[i] = offset + at + 24
      parts.push(text)
      offset += text.length
    })
    const buffer = Buffer.concat(parts)
    if (buffer.length >= MAX_BODY_BYTES)
      throw new Error(`plain body of ${buffer.length} bytes is over the limit`)
    const rows = eventRows(lines, (i) => options.space.format(i))
    templates.push({
      buffer,
      kinds: Uint8Array.from(lines.map((l) => l.kind)),
      of: Uint32Array.from(lines.map((l) => l.of)),
      slots,
      uuidOffsets: offsets,
      freshCount: fresh,
      rows,
    })
  }
  return templates
}

/**
 * A fresh copy of a template with counters from `base` (reserve `template.freshCount` of them);
 * DupPrevious lines repeat fresh counters of `previous` (the stream's last body), or take their
 * own slot when there is none.
 */
export function instantiate(template: PlainTemplate, base: number, previous?: BodyInstance): BodyInstance {
  const body = Buffer.from(template.buffer)
  const n = template.kinds.length
  const counters = new Float64Array(n)
  const previousFresh = previous ? freshCounters(previous) : []
  for (let i = 0; i < n; i++) {
    const kind = template.kinds[i]!
    const of = template.of[i]!
    let counter: number
    if (kind === LineKind.DupInBody) counter = counters[of]!
    else if (kind === LineKind.DupPrevious && previousFresh.length > 0)
      counter = previousFresh[of % previousFresh.length]!
    else counter = base + template.slots[i]!
    counters[i] = counter
    writeCounter(body, template.uuidOffsets[i]!, counter)
  }
  return { body, counters, kinds: template.kinds, events: n }
}

function freshCounters(instance: BodyInstance): number[] {
  const out: number[] = []
  for (let i = 0; i < instance.kinds.length; i++)
    if (instance.kinds[i] === LineKind.Fresh) out.push(instance.counters[i]!)
  return out
}

/** The counters a body's lines ask Sluice to store (valid lines; duplicates included, they name stored uuids). */
export function expectedCounters(instance: BodyInstance): number[] {
  const out: number[] = []
  for (let i = 0; i < instance.kinds.length; i++)
    if (instance.kinds[i] !== LineKind.Invalid) out.push(instance.counters[i]!)
  return out
}

/**
 * Gzip bodies holding as many events as fit under the limit compressed (~9,000 of ~280 bytes),
 * each with fresh uuids from `space`. Lines come from a pool of pre-serialised events (split at
 * the uuid), so a body is string concatenation plus one compression; duplicates and bad lines are
 * drawn per body, DupPrevious lines repeat uuids of the body before.
 */
export function gzipBodies(options: {
  seed: number
  app: string
  customers: readonly Customer[]
  space: UuidSpace
  count: number
  now: number
  mix?: LoadMix
  level?: number
  /** Build the rows the baseline inserts (default true); the sustained supply needs none. */
  rows?: boolean
}): { instance: BodyInstance; rows: Buffer; inflatedBytes: number }[] {
  const keepRows = options.rows ?? true
  const random = mulberry32(deriveSeed(options.seed, `gzip:${options.app}`))
  const mix = options.mix ?? DEFAULT_MIX
  const placeholder = options.space.format(0)
  const none: LoadMix = { dupInBody: 0, dupPrevious: 0, invalid: 0 }
  const split = (text: string): [string, string] => {
    const at = text.indexOf(placeholder)
    return [text.slice(0, at), text.slice(at + placeholder.length)]
  }
  const poolLines = makeLines(random, options.app, options.customers, 20_000, options.now, none)
  const rowTexts = eventRows(poolLines, () => placeholder)
    .toString()
    .split('\n')
  const pool = poolLines.map((line, i) => ({
    text: split(JSON.stringify({ ...line.event, uuid: placeholder }) + '\n'),
    row: split(rowTexts[i]! + '\n'),
  }))
  const invalid = makeLines(random, options.app, options.customers, 200, options.now, {
    ...none,
    invalid: 1,
  }).map((l) => split(JSON.stringify({ ...l.event, uuid: placeholder }) + '\n'))
  const out: { instance: BodyInstance; rows: Buffer; inflatedBytes: number }[] = []
  let guess = 12_000
  let previous: BodyInstance | undefined
  for (let b = 0; b < options.count; b++) {
    const lines = Math.ceil(guess * 1.02)
    const texts: string[] = []
    const rows: string[] = []
    /** Index in `rows` after each line: the rows of a prefix of the body. */
    const rowsAfter: number[] = []
    const kinds = new Uint8Array(lines)
    const counters = new Float64Array(lines)
    const freshLines: number[] = []
    const previousFresh = previous ? freshCounters(previous) : []
    const start = int(random, 0, pool.length - 1)
    for (let i = 0; i < lines; i++) {
      const r = random()
      const from = pool[(start + i) % pool.length]!
      let kind: LineKind = LineKind.Fresh
      let counter: number
      let text = from.text
      if (freshLines.length > 0 && r < mix.dupInBody) {
        const j = pick(random, freshLines)
        kind = LineKind.DupInBody
        counter = counters[j]!
        text = pool[(start + j) % pool.length]!.text
      } else if (r < mix.dupInBody + mix.dupPrevious) {
        kind = LineKind.DupPrevious
        counter =
          previousFresh.length > 0
            ? previousFresh[int(random, 0, previousFresh.length - 1)]!
            : options.space.take(1)
      } else if (r < mix.dupInBody + mix.dupPrevious + mix.invalid) {
        kind = LineKind.Invalid
        counter = options.space.take(1)
        text = pick(random, invalid)
      } else {
        counter = options.space.take(1)
        freshLines.push(i)
      }
      const uuid = options.space.format(counter)
      kinds[i] = kind
      counters[i] = counter
      texts.push(text[0] + uuid + text[1])
      if (kind === LineKind.Fresh && keepRows) rows.push(from.row[0] + uuid + from.row[1])
      rowsAfter.push(rows.length)
    }
    // The longest prefix that compresses under the limit: start from the last body's count (one
    // compression, usually), shrink when over.
    let n = b === 0 ? texts.length : Math.min(texts.length, Math.floor(guess * 0.995))
    let compressed = gzipSync(texts.slice(0, n).join(''), { level: options.level ?? 6 })
    while (compressed.length > GZIP_FILL_BYTES) {
      n = Math.floor(n * (GZIP_FILL_BYTES / compressed.length) * 0.995)
      compressed = gzipSync(texts.slice(0, n).join(''), { level: options.level ?? 6 })
    }
    guess = Math.max(100, Math.floor(n * (GZIP_FILL_BYTES / compressed.length)))
    const instance: BodyInstance = {
      body: compressed,
      counters: counters.slice(0, n),
      kinds: kinds.slice(0, n),
      events: n,
    }
    let inflatedBytes = 0
    for (let i = 0; i < n; i++) inflatedBytes += Buffer.byteLength(texts[i]!)
    out.push({ instance, rows: Buffer.from(rows.slice(0, rowsAfter[n - 1] ?? 0).join('')), inflatedBytes })
    previous = instance
  }
  return out
}

/** The rows Sluice would store for these lines (valid, first copies), as JSONEachRow for `events`. */
function eventRows(lines: readonly GeneratedLine[], uuidOf: (i: number) => string): Buffer {
  const receivedAt = Date.now()
  const out: string[] = []
  lines.forEach((line, i) => {
    if (line.kind !== LineKind.Fresh) return
    const e = line.event
    const c = line.customer
    const attributes: Record<string, string> = {}
    for (const [k, v] of Object.entries((e.attributes as Record<string, unknown> | undefined) ?? {}))
      attributes[k] = String(v)
    out.push(
      JSON.stringify({
        app_id: e.app_uuid,
        uuid: uuidOf(i),
        customer_id: e.customer_id,
        event_name: e.event_name,
        event_time: e.event_time,
        received_at: receivedAt,
        attributes,
        ltv_change: e.ltv_change ?? 0,
        install_uuid: c.install,
        device_uuid: c.device,
        session_uuid: c.session,
        country: c.country,
        language: c.language,
        app_version: c.appVersion,
        os_version: c.osVersion,
        platform: c.platform,
        model: c.model,
        device_timezone: c.timezone,
        source: 'server',
        transaction_id: `AAAB${hex(mulberry32(i), 39)}`,
      }),
    )
  })
  return Buffer.from(out.join('\n') + '\n')
}

// --- Profiles ------------------------------------------------------------------------------------

/** PATCH bodies of both syntaxes (`attributes` and `changes`), half each. */
export function profilePatchBodies(
  seed: number,
  count: number,
): { body: string; syntax: 'attributes' | 'changes' }[] {
  const random = mulberry32(deriveSeed(seed, 'profiles'))
  const out: { body: string; syntax: 'attributes' | 'changes' }[] = []
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      const attributes: Record<string, unknown> = {
        plan: pick(random, ['free', 'silver', 'gold', 'platinum']),
        visits: int(random, 1, 500),
        last_purchase: `2025-${String(int(random, 1, 12)).padStart(2, '0')}-${String(int(random, 1, 28)).padStart(2, '0')}`,
      }
      if (random() < 0.5)
        attributes.tags = [pick(random, ['vip', 'beta', 'churn-risk']), pick(random, ['ios', 'android'])]
      if (random() < 0.3) attributes.$email = `user${hex(random, 6)}@example.com`
      if (random() < 0.2) attributes.old_flag = null
      out.push({ body: JSON.stringify({ attributes }), syntax: 'attributes' })
    } else {
      const changes: Record<string, unknown>[] = [
        { op: 'increment', attr: 'visits', value: int(random, 1, 3) },
      ]
      if (random() < 0.6)
        changes.push({ op: 'set-add', attr: 'tags', value: [pick(random, ['vip', 'beta', 'promo'])] })
      if (random() < 0.3) changes.push({ op: 'set-remove', attr: 'tags', value: 'beta' })
      changes.push({ op: 'assign', attr: 'last_screen', value: pick(random, ['home', 'cart', 'profile']) })
      if (random() < 0.2) changes.push({ op: 'delete', attr: 'old_flag' })
      out.push({ body: JSON.stringify({ changes }), syntax: 'changes' })
    }
  }
  return out
}
