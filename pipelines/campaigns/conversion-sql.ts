import { EVENT_COLUMN } from '../../schemas/audiences.ts'
import type { ConversionFilter, StoredFilterGroup } from '../../schemas/campaigns.ts'

/**
 * A conversion event's filters (or an in-app trigger's) as a condition on `events` rows: SQL text
 * built only from fixed column names and placeholders, every user value a query parameter.
 * dimension_name: a device dimension of the event row, in any spelling ("App Version",
 * app_version), or else an event attribute key (`attributes.` forces the attribute reading).
 */

const spelling = (s: string) =>
  s
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '_')

function source(name: string): { sql: string; attribute?: string } {
  if (name.startsWith('attributes.')) return { sql: '', attribute: name.slice('attributes.'.length) }
  const canonical = spelling(name)
  if (Object.hasOwn(EVENT_COLUMN, canonical)) {
    const column = EVENT_COLUMN[canonical as keyof typeof EVENT_COLUMN]
    return { sql: column }
  }
  return { sql: '', attribute: name }
}

/** A filter's values: an array as sent, or a comma-separated text for the list operators. */
export function filterValues(f: ConversionFilter): string[] {
  if (f.value === undefined) return []
  if (Array.isArray(f.value)) return f.value.map((v) => v.trim())
  if (f.operator === 'is_one_of' || f.operator === 'is_not_one_of' || f.operator === 'between')
    return f.value.split(',').map((v) => v.trim())
  return [f.value.trim()]
}

export function filtersCondition(
  group: StoredFilterGroup | undefined,
  params: Record<string, unknown>,
  prefix: string,
): string {
  if (!group || group.filters.length === 0) return '1'
  const parts = group.filters.map((f, i) => filterCondition(f, params, `${prefix}${i}`))
  return `(${parts.join(group.operator === 'or' ? ' OR ' : ' AND ')})`
}

function filterCondition(f: ConversionFilter, params: Record<string, unknown>, name: string): string {
  const src = source(f.dimension_name)
  let value: string
  if (src.attribute !== undefined) {
    params[`${name}_k`] = src.attribute
    value = `attributes[{${name}_k:String}]`
  } else value = src.sql
  const values = filterValues(f)
  params[`${name}_v`] = values
  const number = `toFloat64OrNull(${value})`
  const first = `toFloat64OrNull(arrayElement({${name}_v:Array(String)}, 1))`
  const second = `toFloat64OrNull(arrayElement({${name}_v:Array(String)}, 2))`
  switch (f.operator) {
    case 'is_one_of':
      return `has({${name}_v:Array(String)}, ${value})`
    case 'is_not_one_of':
      return `NOT has({${name}_v:Array(String)}, ${value})`
    case 'contains':
      return `arrayExists(v -> positionCaseInsensitiveUTF8(${value}, v) > 0, {${name}_v:Array(String)})`
    case 'does_not_contain':
      return `NOT arrayExists(v -> positionCaseInsensitiveUTF8(${value}, v) > 0, {${name}_v:Array(String)})`
    case 'greater_than':
      return `${number} > ${first}`
    case 'less_than':
      return `${number} < ${first}`
    case 'greater_than_or_equal':
      return `${number} >= ${first}`
    case 'less_than_or_equal':
      return `${number} <= ${first}`
    case 'between':
      return `${number} BETWEEN least(${first}, ${second}) AND greatest(${first}, ${second})`
    case 'is_defined':
      return src.attribute !== undefined ? `mapContains(attributes, {${name}_k:String})` : `${value} != ''`
    case 'is_not_defined':
      return src.attribute !== undefined ? `NOT mapContains(attributes, {${name}_k:String})` : `${value} = ''`
  }
}
