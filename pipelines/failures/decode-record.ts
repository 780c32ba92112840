import type { z } from 'zod'

export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string }

/**
 * A bus record's JSON value checked against its schema. Sluice's own stages wrote these records,
 * so one that does not decode is corruption or a version this worker does not know: the caller
 * dead-letters it with `reason` (which names the record kind and every failing path) rather than
 * redelivering it forever.
 */
export function decodeJsonRecord<S extends z.ZodType>(
  value: Buffer,
  schema: S,
  kind: string,
): Decoded<z.infer<S>> {
  let json: unknown
  try {
    json = JSON.parse(value.toString('utf8'))
  } catch {
    return { ok: false, reason: `${kind} is not JSON` }
  }
  const parsed = schema.safeParse(json)
  if (!parsed.success)
    return {
      ok: false,
      reason: `malformed ${kind}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    }
  return { ok: true, value: parsed.data }
}
