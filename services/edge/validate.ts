import type { Context } from 'hono'
import type { z } from 'zod'
import { badRequest } from '../shared/errors.ts'

/** Read a JSON body and parse it with a zod schema; any failure is a 400 naming the problem. */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  let body: unknown
  try {
    const text = await c.req.text()
    body = text.trim() === '' ? {} : JSON.parse(text)
  } catch {
    throw badRequest('request body is not valid JSON')
  }
  const result = schema.safeParse(body)
  if (!result.success) throw badRequest(formatIssues(result.error.issues))
  return result.data
}

export function parseParam<S extends z.ZodType>(
  schema: S,
  value: string | undefined,
  name: string,
): z.infer<S> {
  const result = schema.safeParse(value)
  if (!result.success) throw badRequest(`invalid ${name}: ${JSON.stringify(value)}`)
  return result.data
}

export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ')
}
