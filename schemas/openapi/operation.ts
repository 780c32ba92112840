import { z } from 'zod'
import type { Scope } from '../admin.ts'

/**
 * One route of the edge as the OpenAPI document describes it. Each API area keeps a list of these
 * next to its request schemas (schemas/openapi/<area>.ts); the document (document.ts) turns the
 * zod schemas into JSON Schema with zod's own z.toJSONSchema, so what a route validates with is
 * what the reference shows, and a test fails for a route without an operation.
 */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete'
  /** The route's Hono pattern, e.g. `/admin/v1/orgs/:org_id` (`*` for a wildcard tail). */
  path: string
  tag: string
  summary: string
  description?: string
  /** Who may call: an org's API key (HTTP Basic, with `scope`), the admin token, or anyone. */
  auth: 'basic' | 'admin' | 'none'
  scope?: Scope
  /** Path parameters' schemas and descriptions; any `:name` not listed is a plain string. */
  params?: Record<string, Param>
  query?: z.ZodObject
  body?: RequestBody
  /** The documented answers by status; every other status is the shared error shape. */
  responses: Record<number, ResponseSpec>
  /** Also answers 429 with Retry-After: a rate limit of the route's own (not the auth-failure one). */
  rateLimited?: boolean
  /** Statuses answered with the shared error shape that are worth naming (400, 403, 404, ...). */
  errors?: readonly number[]
}

export interface Param {
  schema: z.ZodType
  description: string
  example: string
}

export interface RequestBody {
  schema: z.ZodType
  example: unknown
  /** Default application/json. */
  contentType?: string
  description?: string
}

export interface ResponseSpec {
  description: string
  /** The JSON body's schema; absent: no body, or a body that is not JSON (`contentType`). */
  schema?: z.ZodType
  example?: unknown
  contentType?: string
  headers?: Record<string, string>
}

/** Every error body of every API: `error` as the spec's APIs answer, `errors` for the profile clients. */
export const errorShape = z
  .looseObject({
    error: z.string().describe('what went wrong, for a person'),
    errors: z.array(z.string()).describe('the same message(s), in a list'),
  })
  .meta({
    id: 'Error',
    example: { error: 'name: name must not be empty', errors: ['name: name must not be empty'] },
  })

/** The status messages the error statuses are documented with. */
export const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'bad input: the message names the field',
  401: 'missing or invalid credentials',
  403: 'the key lacks the scope, or names an org or app not its own; or plain HTTP from a non-loopback client',
  404: 'unknown resource',
  409: 'conflict (e.g. the app id is taken)',
  413: 'body too large',
  415: 'unsupported Content-Type',
  422: 'well-formed but not acceptable: every issue listed',
  429: 'rate limited (or too many failed authentications from this address): retry after Retry-After seconds',
  503: 'overloaded or a dependency is unavailable: retry after Retry-After seconds',
}

export const json = (schema: z.ZodType, example: unknown, description = 'OK'): ResponseSpec => ({
  description,
  schema,
  example,
})

export const noContent: ResponseSpec = { description: 'done; no body' }
