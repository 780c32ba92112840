/**
 * A Retry-After header in milliseconds from `now`: delay-seconds ("120") or an HTTP date. Absent,
 * unparsable or already past: undefined (the pipeline's own backoff applies).
 */
export function retryAfterMs(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const at = Date.parse(text)
  if (Number.isNaN(at) || at <= now) return undefined
  return at - now
}
