import { charsAtMost } from '../../schemas/events.ts'
import { parseTargetRules, type RuleIssue } from '../../schemas/audiences.ts'
import { AUDIENCE_NAME_MAX } from './audience-payloads.ts'

/**
 * The body of an audience create (POST), replace (PUT) or change (PATCH), judged (pure): a body
 * that is not a JSON object is malformed (400); one whose fields break a rule gets every issue
 * with its JSON path (422). POST and PUT need `name` and `target_rules`; PATCH needs at least one.
 */
export type AudienceBody =
  | {
      ok: true
      name?: string
      rules?: { canonical: Record<string, unknown>; given: Record<string, unknown> }
    }
  | { ok: false; status: 400 | 422; issues: RuleIssue[] }

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

export function parseAudienceBody(body: unknown, mode: 'create' | 'replace' | 'change'): AudienceBody {
  if (!isObject(body))
    return { ok: false, status: 400, issues: [{ path: '', message: 'the body must be a JSON object' }] }
  const issues: RuleIssue[] = []
  const required = mode !== 'change'
  let name: string | undefined
  if (body.name !== undefined || required) {
    if (typeof body.name !== 'string')
      issues.push({
        path: 'name',
        message: body.name === undefined ? 'name is required' : 'name must be a string',
      })
    else {
      name = body.name.trim()
      if (name === '') issues.push({ path: 'name', message: 'name must not be empty' })
      else if (!charsAtMost(name, AUDIENCE_NAME_MAX))
        issues.push({ path: 'name', message: `name must be at most ${AUDIENCE_NAME_MAX} characters` })
    }
  }
  let rules: { canonical: Record<string, unknown>; given: Record<string, unknown> } | undefined
  if (body.target_rules !== undefined || required) {
    if (body.target_rules === undefined)
      issues.push({ path: 'target_rules', message: 'target_rules is required' })
    else {
      const parsed = parseTargetRules(body.target_rules)
      if (!parsed.ok) issues.push(...parsed.issues)
      else if (isObject(body.target_rules))
        rules = {
          canonical: parsed.rules as unknown as Record<string, unknown>,
          given: body.target_rules,
        }
    }
  }
  if (mode === 'change' && body.name === undefined && body.target_rules === undefined)
    issues.push({ path: '', message: 'a PATCH changes name or target_rules: give at least one' })
  if (issues.length > 0) return { ok: false, status: 422, issues }
  return { ok: true, ...(name !== undefined && { name }), ...(rules && { rules }) }
}
