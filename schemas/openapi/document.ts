import { z } from 'zod'
import { adminOperations } from './admin.ts'
import { ERROR_DESCRIPTIONS, errorShape, type Operation } from './operation.ts'
import { publicOperations } from './public.ts'
import { queryAreaOperations } from './query.ts'

/**
 * Every documented route, one list per area. A new area adds its list here; the edge's route table
 * is checked against this list by test/unit/openapi-coverage.test.ts.
 */
export const OPERATIONS: readonly Operation[] = [
  ...publicOperations,
  ...queryAreaOperations,
  ...adminOperations,
]

/**
 * Paths the edge serves that are not API operations: the dashboard's pages and assets, the
 * reference UI (HTML, scripts and styles for a browser), and the trailing-slash aliases clients
 * of the original's Apps API call (`/v1/`, `/v1/apps/`), the same operations as without the slash.
 */
export const NOT_API = [/^\/dashboard(\/|$)/, /^\/docs(\/|$)/, /^\/v1(\/apps)?\/$/]

type JsonSchema = Record<string, unknown>
export interface OpenApiDocument {
  openapi: '3.1.0'
  info: { title: string; version: string; description: string }
  servers: { url: string }[]
  tags: { name: string; description: string }[]
  paths: Record<string, Record<string, JsonSchema>>
  components: {
    schemas: Record<string, JsonSchema>
    securitySchemes: Record<string, JsonSchema>
    responses: Record<string, JsonSchema>
    headers: Record<string, JsonSchema>
  }
}

const TAGS: Record<string, string> = {
  events: 'Server-side event uploads, SDK uploads and their receipts (docs/events.md)',
  profiles: 'The profile store (docs/profiles.md)',
  push: 'Push requests, reports and transports (docs/push.md)',
  audiences: 'Audiences and their counts (docs/audiences.md)',
  campaigns: 'Push and in-app campaigns (docs/campaigns.md)',
  exports: 'Audience, profile and event-log exports (docs/exports.md)',
  query: 'The Query and Apps APIs: metrics by dimensions over stored events and sessions (docs/query-api.md)',
  admin: 'The admin API: orgs, apps, keys, scheduled jobs, dead letters (README, "Admin API")',
  auth: 'Credentials',
  operations: 'Health, readiness, metrics and this document',
}

/** The OpenAPI path of a Hono pattern: `:name` → `{name}`, a `*` tail → `{path}`. */
export function openApiPath(pattern: string): string {
  return pattern.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/\*$/, '/{path}')
}

/** A stable id of an operation: `get_admin_v1_orgs_org_id`. */
export function operationId(op: Pick<Operation, 'method' | 'path'>): string {
  const path = op.path.replace(/\*$/, 'path').replace(/\/$/, '/index')
  return `${op.method}${path.replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_+$/, '')
}

const toJsonSchemaOptions = (io: 'input' | 'output') =>
  ({
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
    uri: (id: string) => `#/components/schemas/${id}`,
  }) as const

/**
 * The components of a set of zod schemas: each under its own id (`.meta({ id })`) or the one given,
 * in the request (input) or response (output) form.
 */
function components(entries: readonly { id: string; schema: z.ZodType }[], io: 'input' | 'output') {
  const registry = z.registry<{ id: string }>()
  const added = new Set<z.ZodType>()
  for (const { id, schema } of entries) {
    if (added.has(schema)) continue
    added.add(schema)
    registry.add(schema, { id })
  }
  const generated = z.toJSONSchema(registry, toJsonSchemaOptions(io)) as {
    schemas: Record<string, JsonSchema>
  }
  // Schemas with an id of their own met inside others are put in a `__shared` document: make them
  // components of their own, referenced as the others are.
  const { __shared: shared, ...schemas } = JSON.parse(
    JSON.stringify(generated.schemas).replaceAll(
      '#/components/schemas/__shared#/$defs/',
      '#/components/schemas/',
    ),
  ) as Record<string, JsonSchema>
  Object.assign(schemas, (shared?.$defs as Record<string, JsonSchema> | undefined) ?? {})
  for (const schema of Object.values(schemas)) {
    delete schema.$schema
    delete schema.$id
  }
  return schemas
}

/** The id a schema is referenced by: its own (`.meta({ id })`), else the one the operation gives it. */
const idOf = (schema: z.ZodType, fallback: string, named: Map<z.ZodType, string>): string => {
  const id = z.globalRegistry.get(schema)?.id ?? named.get(schema) ?? fallback
  named.set(schema, id)
  return id
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` })
const errorResponse = (status: number) => ({ $ref: `#/components/responses/Error${status}` })

/** The OpenAPI 3.1 document of `operations`, built from their zod schemas. */
export function openApiDocument(operations: readonly Operation[] = OPERATIONS): OpenApiDocument {
  const inputs: { id: string; schema: z.ZodType }[] = []
  const outputs: { id: string; schema: z.ZodType }[] = [{ id: 'Error', schema: errorShape }]
  const paths: OpenApiDocument['paths'] = {}
  const errorStatuses = new Set<number>([401, 429])
  const named = new Map<z.ZodType, string>()

  for (const op of operations) {
    const id = operationId(op)
    const parameters: JsonSchema[] = []
    for (const name of pathParams(op.path)) {
      const param = op.params?.[name]
      const schema: JsonSchema = param
        ? z.toJSONSchema(param.schema, { io: 'input', unrepresentable: 'any' })
        : { type: 'string' }
      delete schema.$schema
      parameters.push({
        name,
        in: 'path',
        required: true,
        schema,
        ...(param && { description: param.description, example: param.example }),
      })
    }
    if (op.query) {
      const query = z.toJSONSchema(op.query, { io: 'input', unrepresentable: 'any' }) as {
        properties?: Record<string, JsonSchema>
        required?: string[]
      }
      for (const [name, schema] of Object.entries(query.properties ?? {}))
        parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema })
    }

    const responses: Record<string, unknown> = {}
    for (const [status, spec] of Object.entries(op.responses)) {
      const headers = Object.fromEntries(
        Object.entries(spec.headers ?? {}).map(([name, description]) => [
          name,
          { description, schema: { type: 'string' } },
        ]),
      )
      let content: Record<string, unknown> | undefined
      if (spec.schema) {
        const schemaId = idOf(spec.schema, `${id}_${status}`, named)
        outputs.push({ id: schemaId, schema: spec.schema })
        content = {
          [spec.contentType ?? 'application/json']: { schema: ref(schemaId), example: spec.example },
        }
      } else if (spec.contentType) content = { [spec.contentType]: { schema: { type: 'string' } } }
      responses[status] = {
        description: spec.description,
        ...(Object.keys(headers).length > 0 && { headers }),
        ...(content && { content }),
      }
    }
    const errors = new Set(op.errors ?? [])
    if (op.auth !== 'none') errors.add(401).add(429)
    if (op.rateLimited) errors.add(429)
    for (const status of errors) {
      errorStatuses.add(status)
      responses[String(status)] ??= errorResponse(status)
    }
    responses.default = { $ref: '#/components/responses/Error' }

    let requestBody: JsonSchema | undefined
    if (op.body) {
      const schemaId = idOf(op.body.schema, `${id}_body`, named)
      inputs.push({ id: schemaId, schema: op.body.schema })
      requestBody = {
        required: true,
        ...(op.body.description && { description: op.body.description }),
        content: {
          [op.body.contentType ?? 'application/json']: { schema: ref(schemaId), example: op.body.example },
        },
      }
    }

    const security = op.auth === 'basic' ? [{ apiKey: [] }] : op.auth === 'admin' ? [{ adminToken: [] }] : []
    const description = [
      op.description,
      op.scope && `Needs an API key with the \`${op.scope}\` scope.`,
      op.rateLimited && 'Rate limited: 429 with Retry-After past the limit.',
    ]
      .filter(Boolean)
      .join('\n\n')
    paths[openApiPath(op.path)] ??= {}
    paths[openApiPath(op.path)]![op.method] = {
      operationId: id,
      tags: [op.tag],
      summary: op.summary,
      ...(description && { description }),
      security,
      ...(parameters.length > 0 && { parameters }),
      ...(requestBody && { requestBody }),
      responses,
    }
  }

  const schemas = { ...components(inputs, 'input'), ...components(outputs, 'output') }
  const errorResponses: Record<string, JsonSchema> = {
    Error: { description: 'an error', content: { 'application/json': { schema: ref('Error') } } },
  }
  for (const status of [...errorStatuses].sort()) {
    const retry = status === 429 || status === 503
    errorResponses[`Error${status}`] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'an error',
      ...(retry && { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } }),
      content: {
        'application/json': {
          schema: ref('Error'),
          example: { error: exampleMessage(status), errors: [exampleMessage(status)] },
        },
      },
    }
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version: '1',
      description:
        'Every route of the Sluice edge: the public APIs (HTTP Basic with an org API key and secret; SDK routes name an app key) and the admin API (Bearer admin token). Every error body is {"error", "errors"}. A client address over the failed-authentication limit gets 429 with Retry-After on every authenticated route.',
    },
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas,
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'basic',
          description: "an org's API key (user) and secret (password)",
        },
        adminToken: { type: 'http', scheme: 'bearer', description: 'the admin token (SLUICE_ADMIN_TOKEN)' },
      },
      responses: errorResponses,
      headers: {
        RetryAfter: {
          description: 'seconds to wait before retrying',
          schema: { type: 'integer', minimum: 0 },
        },
      },
    },
  }
}

function pathParams(path: string): string[] {
  const names = [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!)
  return path.endsWith('/*') ? [...names, 'path'] : names
}

function exampleMessage(status: number): string {
  switch (status) {
    case 401:
      return 'invalid credentials'
    case 429:
      return 'rate limit exceeded'
    case 404:
      return 'not found'
    case 503:
      return 'could not store the upload durably; retry'
    default:
      return ERROR_DESCRIPTIONS[status] ?? 'request failed'
  }
}
