import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { expect } from 'vitest'
import { openApiDocument, type OpenApiDocument } from '../../schemas/openapi/document.ts'

/**
 * Checks answers against the OpenAPI document (/openapi.json): the document's JSON Schemas are
 * compiled with ajv (draft 2020-12), so a test checks what a client of the document would read.
 */
export class OpenApiCheck {
  readonly document: OpenApiDocument = openApiDocument()
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
  private readonly compiled = new Map<string, ValidateFunction>()
  private readonly routes: { method: string; template: string; pattern: RegExp }[]

  constructor() {
    this.ajv.addSchema({ $id: 'openapi', components: this.document.components })
    this.routes = Object.entries(this.document.paths).flatMap(([template, ops]) =>
      Object.keys(ops).map((method) => ({
        method,
        template,
        pattern: new RegExp(
          `^${template
            .replace(/[.+?^$()|[\]\\]/g, '\\$&')
            .replace(/\{path\}$/, '.+')
            .replace(/\{[A-Za-z0-9_]+\}/g, '[^/]+')}$`,
        ),
      })),
    )
  }

  /** The documented operation a request hits: literal paths before templated ones, as the edge routes. */
  operationOf(
    method: string,
    path: string,
  ): { template: string; operation: Record<string, unknown> } | undefined {
    const m = method.toLowerCase()
    const matches = this.routes.filter((r) => r.method === m && r.pattern.test(path))
    const best = matches.sort((a, b) => braces(a.template) - braces(b.template))[0]
    return best && { template: best.template, operation: this.document.paths[best.template]![m]! }
  }

  /** A validator of a schema of the document (a `$ref` into components, or an inline schema). */
  validator(schema: Record<string, unknown>): ValidateFunction {
    const key = JSON.stringify(schema)
    let validate = this.compiled.get(key)
    if (!validate) {
      validate = this.ajv.compile(rebase(schema))
      this.compiled.set(key, validate)
    }
    return validate
  }

  /** The errors of `value` against `schema` (empty: valid). */
  errors(schema: Record<string, unknown>, value: unknown): string[] {
    const validate = this.validator(schema)
    if (validate(value)) return []
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
  }

  /**
   * Fails the test unless `response` (to `method` on `url`) is what the document says: the route is
   * documented, the status is one of its answers (or an error, in the shared shape), and a JSON
   * body matches the schema of that answer. Reads a clone: the caller may still read the body.
   */
  async expectDocumented(method: string, url: string, response: Response): Promise<void> {
    const path = new URL(url, 'http://sluice').pathname
    const found = this.operationOf(method, path)
    if (!found) {
      // A path no route serves: only an error, in the shared shape, may answer it.
      expect(response.status, `${method} ${path} is not in the OpenAPI document`).toBeGreaterThanOrEqual(400)
      const body: unknown = await response.clone().json()
      expect(this.errors({ $ref: '#/components/schemas/Error' }, body), `${method} ${path}`).toEqual([])
      return
    }
    const responses = found.operation.responses as Record<string, Record<string, unknown>>
    const status = String(response.status)
    let answer = responses[status] ?? (response.status >= 400 ? responses.default : undefined)
    expect(
      answer,
      `${method} ${found.template} answered ${status}, which the document does not list`,
    ).toBeDefined()
    answer = this.resolve(answer!)
    const content = answer.content as Record<string, { schema: Record<string, unknown> }> | undefined
    const json = content?.['application/json']
    const type = response.headers.get('content-type') ?? ''
    if (!json) return
    expect(type, `${method} ${found.template} ${status}: documented as JSON`).toMatch(/^application\/json/)
    const body: unknown = await response.clone().json()
    expect(
      this.errors(json.schema, body),
      `${method} ${found.template} ${status}: body ${JSON.stringify(body).slice(0, 500)}`,
    ).toEqual([])
  }

  private resolve(node: Record<string, unknown>): Record<string, unknown> {
    const target = node.$ref
    if (typeof target !== 'string') return node
    const name = target.replace('#/components/responses/', '')
    return this.document.components.responses[name] as Record<string, unknown>
  }
}

const braces = (template: string) => (template.match(/\{/g) ?? []).length

/** Points a document's `#/components/...` references at the schema registered as 'openapi'. */
function rebase(schema: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')) as Record<
    string,
    unknown
  >
}

let shared: OpenApiCheck | undefined
/** One checker per test file (building the document and compiling schemas costs some milliseconds). */
export const openApi = (): OpenApiCheck => (shared ??= new OpenApiCheck())

/** fetch, then check the answer against the document; the caller reads the answer as usual. */
export async function documentedFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(url, init)
  // A followed redirect answers for where it led (an export's 302 to its signed file link).
  await openApi().expectDocumented(init.method ?? 'GET', response.redirected ? response.url : url, response)
  return response
}
