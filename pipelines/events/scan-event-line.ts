import { EVENT_LIMITS, isEventSchemaUrl } from '../../schemas/events.ts'
import type { EventPacker } from './event-row.ts'
import type { RowBinaryWriter } from './row-binary.ts'
import type { TimeWindow } from './line-checks.ts'
import type { LineScanner } from './validate-lines.ts'

/**
 * The CPU pool's short way through a server event line: a scanner of the line's bytes that takes
 * the shape nearly every sender uses (the known members once each, strings without escapes,
 * integers without fraction or exponent, attributes of strings and such integers) and, when the
 * line is a valid event of that shape, writes its own values as RowBinary straight from the bytes.
 * It decides nothing else: any line it does not take whole (a refusal, an escape, an unknown
 * member, a number spelt another way, a uuid to canonicalise…) goes to `checkEventText`
 * (validate-event.ts), JSON.parse and the full rules, which decide exactly as before. So the scanner
 * only has to be right about what it accepts, and a test holds it to the full path's bytes.
 *
 * Why: on the pool, JSON.parse of a bench line (~300 bytes) cost ~1.35 µs, most of the task, and
 * built an object, strings and an attributes object only to write them out as bytes again; this
 * reads each byte once and makes three strings (app, customer, uuid: the splitter needs them).
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const COMMA = 0x2c
const OPEN = 0x7b
const CLOSE = 0x7d
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39

// Members, one bit each (a second copy of one goes to the full path: JSON.parse keeps the last).
const SCHEMA_URL = 1
const APP_UUID = 2
const CUSTOMER_ID = 4
const EVENT_NAME = 8
const EVENT_TIME = 16
const UUID = 32
const ATTRIBUTES = 64
const LTV_CHANGE = 128
const REQUIRED = SCHEMA_URL | APP_UUID | CUSTOMER_ID | EVENT_NAME | EVENT_TIME | UUID

// Integers of up to 15 digits are exact doubles and their own String(): no leading zero, no `-0`.
const MAX_INTEGER_DIGITS = 15

const PROTO = Buffer.from('__proto__', 'latin1')

const NAMES: readonly [Buffer, number][] = [
  ['schema_url', SCHEMA_URL],
  ['app_uuid', APP_UUID],
  ['customer_id', CUSTOMER_ID],
  ['event_name', EVENT_NAME],
  ['event_time', EVENT_TIME],
  ['uuid', UUID],
  ['attributes', ATTRIBUTES],
  ['ltv_change', LTV_CHANGE],
].map(([name, bit]) => [Buffer.from(name as string, 'latin1'), bit as number])

function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a
}

export class EventLineScanner implements LineScanner {
  /** The app, customer and canonical uuid of the line scanned last (when `scan` said yes). */
  app = ''
  customer = ''
  uuid = ''

  private bytes: Buffer = Buffer.alloc(0)
  // Offsets into `bytes` of the last line's string values (the bytes between the quotes).
  private customerStart = 0
  private customerEnd = 0
  private nameStart = 0
  private nameEnd = 0
  private uuidStart = 0
  private eventTime = 0
  private ltvChange = 0
  // Attributes: [nameStart, nameEnd, valueStart, valueEnd] per member, in line order.
  private readonly attributes = new Int32Array(4 * EVENT_LIMITS.maxAttributes)
  private attributeCount = 0
  // Strings read last, reused while the next line's bytes are the same (one app per body, as a rule).
  private lastApp = Buffer.alloc(0)
  private lastSchemaUrl = Buffer.alloc(0)

  // Scan state: the position, and the length in characters (code points, as charsAtMost counts
  // them) of the last string scanned.
  private at = 0
  private end = 0
  private chars = 0

  constructor(
    private readonly window: TimeWindow,
    /** Where `take` packs the events taken. */
    private readonly packer: EventPacker,
  ) {}

  // LineScanner: an event's identity in a body is its uuid, within its app.
  get identity(): string {
    return this.uuid
  }

  get scope(): string {
    return this.app
  }

  take(lineNumber: number): void {
    this.packer.addScanned(this, lineNumber)
  }

  /**
   * Whether `bytes[start, end)` (one line, valid UTF-8) is a valid event of the common shape. When
   * it is, `app`, `customer` and `uuid` are its values and `writeOwn` writes the rest.
   */
  scan(bytes: Buffer, start: number, end: number): boolean {
    this.bytes = bytes
    this.at = start
    this.end = end
    this.attributeCount = 0
    let seen = 0
    let schemaStart = 0
    let schemaEnd = 0
    let appStart = 0
    let appEnd = 0
    let uuidEnd = 0
    this.skipSpace()
    if (!this.consume(OPEN)) return false
    for (;;) {
      this.skipSpace()
      if (!this.consume(QUOTE)) return false
      const keyStart = this.at
      if (!this.string()) return false
      const member = memberBit(bytes, keyStart, this.at - 1)
      if (member === 0 || (seen & member) !== 0) return false
      seen |= member
      this.skipSpace()
      if (!this.consume(COLON)) return false
      this.skipSpace()
      if (member === ATTRIBUTES) {
        if (!this.attributesObject()) return false
      } else if (member === EVENT_TIME || member === LTV_CHANGE) {
        const value = this.integer()
        if (value === undefined) return false
        if (member === EVENT_TIME) this.eventTime = value
        else this.ltvChange = value
      } else {
        if (!this.consume(QUOTE)) return false
        const valueStart = this.at
        if (!this.string()) return false
        const valueEnd = this.at - 1
        const chars = this.chars
        switch (member) {
          case SCHEMA_URL:
            schemaStart = valueStart
            schemaEnd = valueEnd
            break
          case APP_UUID:
            if (chars < 1 || chars > EVENT_LIMITS.appUuidMaxChars) return false
            appStart = valueStart
            appEnd = valueEnd
            break
          case CUSTOMER_ID:
            if (chars < 1 || chars > EVENT_LIMITS.customerIdMaxChars) return false
            this.customerStart = valueStart
            this.customerEnd = valueEnd
            break
          case EVENT_NAME:
            if (chars < 1 || chars > EVENT_LIMITS.eventNameMaxChars) return false
            this.nameStart = valueStart
            this.nameEnd = valueEnd
            break
          case UUID:
            if (!canonicalUuidBytes(bytes, valueStart, valueEnd)) return false
            this.uuidStart = valueStart
            uuidEnd = valueEnd
            break
        }
      }
      this.skipSpace()
      if (this.consume(COMMA)) continue
      if (this.consume(CLOSE)) break
      return false
    }
    this.skipSpace()
    if (this.at !== end || (seen & REQUIRED) !== REQUIRED) return false
    if (!this.schemaUrlGood(schemaStart, schemaEnd)) return false
    const w = this.window
    if (this.eventTime < w.receivedAt - w.pastWindowMs || this.eventTime > w.receivedAt + w.futureWindowMs)
      return false
    if ((seen & LTV_CHANGE) === 0) this.ltvChange = 0
    this.app = this.appString(appStart, appEnd)
    this.customer = bytes.toString('utf8', this.customerStart, this.customerEnd)
    this.uuid = bytes.toString('latin1', this.uuidStart, uuidEnd)
    return true
  }

  /** The last scanned event's own values (`OWN_COLUMNS`), as `writeOwnValues` writes them. */
  writeOwn(out: RowBinaryWriter): void {
    const bytes = this.bytes
    out.stringBytes(bytes, this.uuidStart, this.uuidStart + 36)
    out.stringBytes(bytes, this.customerStart, this.customerEnd)
    out.stringBytes(bytes, this.nameStart, this.nameEnd)
    out.int64(this.eventTime)
    const attributes = this.attributes
    const count = this.attributeCount
    out.varUInt(count)
    for (let i = 0; i < 4 * count; i += 4) {
      out.stringBytes(bytes, attributes[i]!, attributes[i + 1]!)
      out.stringBytes(bytes, attributes[i + 2]!, attributes[i + 3]!)
    }
    out.int64(this.ltvChange)
  }

  private consume(b: number): boolean {
    if (this.at < this.end && this.bytes[this.at] === b) {
      this.at++
      return true
    }
    return false
  }

  private skipSpace(): void {
    const bytes = this.bytes
    while (this.at < this.end && isSpace(bytes[this.at]!)) this.at++
  }

  /**
   * The rest of a string after its opening quote, up to and past its closing quote. No escapes
   * (their decoding is the full path's) and no control characters (JSON refuses them).
   */
  private string(): boolean {
    const bytes = this.bytes
    const end = this.end
    let at = this.at
    let chars = 0
    for (; at < end; at++) {
      const b = bytes[at]!
      if (b === QUOTE) {
        this.at = at + 1
        this.chars = chars
        return true
      }
      if (b === BACKSLASH || b < 0x20) return false
      // A code point is counted at its lead byte; continuation bytes are 10xxxxxx.
      if ((b & 0xc0) !== 0x80) chars++
    }
    return false
  }

  /** An integer of up to 15 digits, spelt as String() spells it (no leading zero, no `-0`). */
  private integer(): number | undefined {
    const bytes = this.bytes
    let at = this.at
    const negative = at < this.end && bytes[at] === MINUS
    if (negative) at++
    const first = at
    let value = 0
    while (at < this.end) {
      const b = bytes[at]!
      if (b < ZERO || b > NINE) break
      value = value * 10 + (b - ZERO)
      at++
    }
    const digits = at - first
    if (digits === 0 || digits > MAX_INTEGER_DIGITS) return undefined
    if (bytes[first] === ZERO && (digits > 1 || negative)) return undefined
    this.at = at
    return negative ? -value : value
  }

  /** `{ "name": "value" | integer, … }` into `attributes`, at most `maxAttributes` members. */
  private attributesObject(): boolean {
    if (!this.consume(OPEN)) return false
    this.skipSpace()
    if (this.consume(CLOSE)) return true
    const bytes = this.bytes
    const attributes = this.attributes
    for (;;) {
      this.skipSpace()
      if (!this.consume(QUOTE)) return false
      const nameStart = this.at
      if (!this.string()) return false
      const nameEnd = this.at - 1
      if (this.chars < 1 || this.chars > EVENT_LIMITS.attributeNameMaxChars) return false
      // A name starting with a digit may be index-like, which JavaScript objects order first, and
      // `__proto__` is refused: both are the full path's.
      const lead = bytes[nameStart]!
      if (lead >= ZERO && lead <= NINE) return false
      if (nameEnd - nameStart === PROTO.length && sameBytes(bytes, nameStart, nameEnd, PROTO, 0)) return false
      const count = this.attributeCount
      if (count === EVENT_LIMITS.maxAttributes) return false
      for (let i = 0; i < 4 * count; i += 4) {
        const start = attributes[i]!
        if (
          attributes[i + 1]! - start === nameEnd - nameStart &&
          sameBytes(bytes, nameStart, nameEnd, bytes, start)
        )
          return false
      }
      this.skipSpace()
      if (!this.consume(COLON)) return false
      this.skipSpace()
      let valueStart: number
      let valueEnd: number
      if (this.consume(QUOTE)) {
        valueStart = this.at
        if (!this.string()) return false
        valueEnd = this.at - 1
        if (this.chars > EVENT_LIMITS.attributeValueMaxChars) return false
      } else {
        valueStart = this.at
        if (this.integer() === undefined) return false
        valueEnd = this.at
      }
      const slot = 4 * count
      attributes[slot] = nameStart
      attributes[slot + 1] = nameEnd
      attributes[slot + 2] = valueStart
      attributes[slot + 3] = valueEnd
      this.attributeCount = count + 1
      this.skipSpace()
      if (this.consume(COMMA)) continue
      return this.consume(CLOSE)
    }
  }

  private schemaUrlGood(start: number, end: number): boolean {
    const bytes = this.bytes
    const last = this.lastSchemaUrl
    if (last.length === end - start && sameBytes(bytes, start, end, last, 0)) return true
    if (!isEventSchemaUrl(bytes.toString('utf8', start, end))) return false
    this.lastSchemaUrl = Buffer.from(bytes.subarray(start, end))
    return true
  }

  private appString(start: number, end: number): string {
    const last = this.lastApp
    if (last.length === end - start && sameBytes(this.bytes, start, end, last, 0)) return this.app
    this.lastApp = Buffer.from(this.bytes.subarray(start, end))
    return this.bytes.toString('utf8', start, end)
  }
}

/** The member bit of the key `bytes[start, end)`, 0 for a member the scanner does not take. */
function memberBit(bytes: Buffer, start: number, end: number): number {
  // One candidate by length and a distinguishing byte, then compared whole.
  let candidate: number
  switch (end - start) {
    case 4:
      candidate = 5
      break
    case 8:
      candidate = 1
      break
    case 11:
      candidate = 2
      break
    case 10:
      switch (bytes[start]) {
        case 0x73: // s
          candidate = 0
          break
        case 0x61: // a
          candidate = 6
          break
        case 0x6c: // l
          candidate = 7
          break
        case 0x65: // e: event_name or event_time
          candidate = bytes[start + 6] === 0x6e ? 3 : 4
          break
        default:
          return 0
      }
      break
    default:
      return 0
  }
  const [name, bit] = NAMES[candidate]!
  return sameBytes(bytes, start, end, name, 0) ? bit : 0
}

/** `a[aStart, aEnd)` equals `b` from `bStart` on. */
function sameBytes(a: Buffer, aStart: number, aEnd: number, b: Buffer, bStart: number): boolean {
  const n = aEnd - aStart
  for (let i = 0; i < n; i++) if (a[aStart + i] !== b[bStart + i]) return false
  return true
}

/** A uuid in the canonical spelling (36 bytes, lower-case hex, dashes at 8, 13, 18, 23). */
function canonicalUuidBytes(bytes: Buffer, start: number, end: number): boolean {
  if (end - start !== 36) return false
  for (let i = 0; i < 36; i++) {
    const b = bytes[start + i]!
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (b !== MINUS) return false
    } else if (!((b >= ZERO && b <= NINE) || (b >= 0x61 && b <= 0x66))) return false
  }
  return true
}
