import type { AudienceRow } from './audience-commands.ts'
import type { AudienceCounts } from './audience-reader.ts'

/**
 * The API's bodies of audiences, as the spec's tables give them (docs/audiences.md, "API"). Pure.
 *
 * `target_rules` is answered as the client gave it (its spellings and fields, so a client reads
 * back what it wrote, in the spec's shape: a filter's `value`, say), except that a profile
 * criterion carries only `key`, `values` and `operator`, as the spec says of audience responses.
 * The canonical form (schemas/audiences.ts) is what is counted, and is what docs/audiences.md
 * defines the meaning of every spelling by.
 */

export const isoTime = (ms: number): string => new Date(ms).toISOString()
const isoOrNull = (ms: number | undefined): string | null => (ms === undefined ? null : isoTime(ms))

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** The rules as answered: as given, each profile criterion cut to key, values and operator. */
export function answeredRules(given: unknown): unknown {
  if (!isObject(given) || !isObject(given.profile) || !Array.isArray(given.profile.criteria)) return given
  const criteria = (given.profile.criteria as unknown[]).map((c) => {
    if (!isObject(c)) return c
    const values = c.values !== undefined ? c.values : c.value
    return {
      key: c.key,
      ...(values !== undefined && { values }),
      operator: c.operator,
    }
  })
  return { ...given, profile: { ...given.profile, criteria } }
}

export interface Counts {
  user_count: number
  has_push: number
  seen_last_thirty: number
}

const countsOf = (counts: AudienceCounts | undefined): Counts => ({
  user_count: counts?.user_count ?? 0,
  has_push: counts?.has_push ?? 0,
  seen_last_thirty: counts?.seen_last_thirty ?? 0,
})

/** What create and update answer: the Audience with its counts (0 while never computed). */
export function audienceBody(
  a: { id: number; name: string; created_at: number; target_rules_given: unknown },
  counts: AudienceCounts | undefined,
) {
  return {
    id: a.id,
    name: a.name,
    created_at: isoTime(a.created_at),
    target_rules: answeredRules(a.target_rules_given),
    segmentation_count: countsOf(counts),
  }
}

const givenRules = (row: AudienceRow): unknown => JSON.parse(row.target_rules_given) as unknown

/** An item of the list: with updated_at, deleted_at and the counts' time (null: never computed). */
export function listItem(row: AudienceRow, counts: AudienceCounts | undefined) {
  return {
    id: row.id,
    name: row.name,
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    deleted_at: row.deleted_at === null ? null : isoTime(row.deleted_at),
    target_rules: answeredRules(givenRules(row)),
    segmentation_count: { ...countsOf(counts), updated_at: isoOrNull(counts?.calculated_at) },
  }
}

/** The detail: the audience id as a string, its counts and when they were computed (null: never). */
export function detailBody(row: AudienceRow, counts: AudienceCounts | undefined) {
  return {
    segmentation_id: String(row.id),
    ...countsOf(counts),
    updated_at: isoOrNull(counts?.calculated_at),
    target_rules: answeredRules(givenRules(row)),
  }
}

/** The segmentation result: the audience id as an integer, the counts and when they were computed. */
export function segmentationBody(id: number, counts: AudienceCounts | undefined) {
  return {
    segmentation_id: id,
    ...countsOf(counts),
    last_calculated_on: isoOrNull(counts?.calculated_at),
  }
}
