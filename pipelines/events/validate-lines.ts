import { rejected, tooLong, type RejectedLine } from './line-checks.ts'
import { forEachLine } from './lines.ts'

/**
 * A short way to take a valid line straight from its bytes (the CPU pool's event scanner,
 * scan-event-line.ts). It only takes lines it can decide whole as valid; every other line goes to
 * `check`, so the two must agree on what a valid line is and what it holds.
 */
export interface LineScanner {
  /** Whether `body[start, end)` is a valid item taken whole; if so, `scope` and `identity` are its. */
  scan(body: Buffer, start: number, end: number): boolean
  /** The scanned item's identity and scope, as `identity` and `scope` give them for a checked one. */
  readonly identity: string
  readonly scope: string
  /** The scanned item is kept (not a duplicate in the body). */
  take(lineNumber: number): void
}

/**
 * The walk both upload validators (server events and SDK rows) share: check each line, refuse what
 * cannot be read, and keep the first line of each identity (`identity` of a valid item), refusing
 * later ones as `duplicate_in_body`. Only the first `maxRejects` rejected lines are kept; the
 * others are counted, so a small body of a million bad lines costs a count, not a million reasons.
 */
export function validateLines<T extends { uuid: string }, R extends string>(
  body: Buffer,
  check: (text: string, line: number) => T | RejectedLine<R>,
  identity: (item: T) => string,
  limits: { maxLineBytes?: number | undefined; maxRejects?: number | undefined },
  /**
   * Where an identity is unique (an event's app): identities are kept per scope, so no key string
   * is built per line (a concatenated key must be flattened to be hashed). One scope if absent.
   */
  scope: (item: T) => string = () => '',
  /**
   * Takes each valid item as it is found, instead of the result's `items` (left empty): what the
   * caller keeps of an item may be far smaller than the item.
   */
  onItem?: (item: T) => void,
  /** Offered every line first (only with `onItem`: a scanned line is never an item object). */
  scanner?: LineScanner,
): {
  items: T[]
  rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[]
  rejected: number
  lines: number
} {
  const { maxLineBytes, maxRejects = Infinity } = limits
  const items: T[] = []
  const rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[] = []
  let rejectedCount = 0
  const reject = (r: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>) => {
    if (rejectedCount++ < maxRejects) rejects.push(r)
  }
  const seen = new Map<string, Map<string, number>>()
  // The first line of `key` in `where`, or undefined after recording this one as the first.
  const firstLine = (where: string, key: string, lineNumber: number): number | undefined => {
    let lines = seen.get(where)
    if (!lines) seen.set(where, (lines = new Map<string, number>()))
    const first = lines.get(key)
    if (first === undefined) lines.set(key, lineNumber)
    return first
  }
  const duplicate = (lineNumber: number, uuid: string, first: number) =>
    reject(rejected(lineNumber, uuid, 'duplicate_in_body', `uuid already used on line ${first}`))
  const bytes =
    scanner && onItem
      ? (body: Buffer, start: number, end: number, lineNumber: number): boolean => {
          if (!scanner.scan(body, start, end)) return false
          const first = firstLine(scanner.scope, scanner.identity, lineNumber)
          if (first !== undefined) duplicate(lineNumber, scanner.identity, first)
          else scanner.take(lineNumber)
          return true
        }
      : undefined
  const lines = forEachLine(
    body,
    {
      bytes,
      line(text, lineNumber) {
        // Past the rejects kept, a rejected line is only counted, and a line that does not start
        // as an object is rejected whatever it holds (invalid_json or not_an_object): no need to
        // parse it. A 2 KB gzip body of a million such lines then costs a walk over its lines.
        if (rejectedCount >= maxRejects && !startsAsObject(text)) {
          rejectedCount++
          return
        }
        const result = check(text, lineNumber)
        if ('reason' in result) {
          reject(result)
          return
        }
        const first = firstLine(scope(result), identity(result), lineNumber)
        if (first !== undefined) {
          duplicate(lineNumber, result.uuid, first)
          return
        }
        if (onItem) onItem(result)
        else items.push(result)
      },
      refused(lineNumber, why, bytes) {
        reject(
          why === 'line_too_long'
            ? tooLong(lineNumber, bytes, maxLineBytes ?? Infinity)
            : rejected(lineNumber, null, 'invalid_json', 'line is not valid UTF-8'),
        )
      },
    },
    maxLineBytes,
  )
  return { items, rejects, rejected: rejectedCount, lines }
}

/** The first character that is not JSON whitespace is `{`. */
function startsAsObject(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x7b) return true
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false
  }
  return false
}
