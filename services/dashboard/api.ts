import type { Context } from 'hono'
import type { Session, Signed } from './session.ts'

/** Hands a request to the edge's own app, as if the browser had sent it (same socket, same limits). */
export type Dispatch = (request: Request, env: unknown) => Response | Promise<Response>

/** An API answer: the body of a success, or the error the API gave, field by field. */
export type Answer<T> =
  | { ok: true; status: number; body: T; headers: Headers }
  | { ok: false; status: number; error: string; errors: string[]; headers: Headers }

export const authorizationOf = (who: Signed): string =>
  who.kind === 'admin'
    ? `Bearer ${who.token}`
    : `Basic ${Buffer.from(`${who.apiKey}:${who.secret}`).toString('base64')}`

/**
 * The dashboard's client of Sluice's public and admin APIs. Every call goes through the edge's own
 * routes (app.fetch with the browser request's environment): the same authentication, scopes, org
 * checks, rate limits and failed-authentication limit as any client; there is no other way in.
 */
export class DashboardApi {
  constructor(
    private readonly dispatch: Dispatch,
    private readonly c: Context,
    private readonly authorization: string | undefined,
  ) {}

  static of(dispatch: Dispatch, c: Context, session: Session | Signed | undefined): DashboardApi {
    const who = session && 'who' in session ? session.who : session
    return new DashboardApi(dispatch, c, who && authorizationOf(who))
  }

  /** The same API as another principal (an operator's key of one org). */
  as(authorization: string): DashboardApi {
    return new DashboardApi(this.dispatch, this.c, authorization)
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
    const init: RequestInit = { method, headers: this.headers(body === undefined ? undefined : 'application/json') }
    if (body !== undefined) init.body = JSON.stringify(body)
    return this.send<T>(path, init)
  }

  async form<T>(method: string, path: string, form: FormData): Promise<Answer<T>> {
    return this.send<T>(path, { method, body: form, headers: this.headers(undefined) })
  }

  /** The raw answer (files, metrics text). */
  async raw(path: string): Promise<Response> {
    return this.dispatch(new Request(this.url(path), { headers: this.headers(undefined) }), this.c.env)
  }

  private async send<T>(path: string, init: RequestInit): Promise<Answer<T>> {
    const res = await this.dispatch(new Request(this.url(path), init), this.c.env)
    const text = await res.text()
    let parsed: unknown = undefined
    try {
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      parsed = text
    }
    if (res.ok) return { ok: true, status: res.status, body: parsed as T, headers: res.headers }
    const err = (parsed ?? {}) as { error?: unknown; errors?: unknown }
    const error = typeof err.error === 'string' ? err.error : `the API answered ${res.status}`
    const errors = Array.isArray(err.errors) ? err.errors.filter((e): e is string => typeof e === 'string') : [error]
    return { ok: false, status: res.status, error, errors, headers: res.headers }
  }

  private url(path: string): string {
    return new URL(path, new URL(this.c.req.url).origin).toString()
  }

  private headers(contentType: string | undefined): Record<string, string> {
    const headers: Record<string, string> = {}
    if (this.authorization) headers.Authorization = this.authorization
    if (contentType) headers['Content-Type'] = contentType
    return headers
  }
}

/**
 * An API error's messages by the form field they name ("name: must not be empty" → name), and the
 * rest under '' (shown at the top of the form).
 */
export function errorsByField(errors: readonly string[], fields: readonly string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const message of errors) {
    const match = /^([A-Za-z0-9_.[\]]+): (.*)$/.exec(message)
    const path = match?.[1] ?? ''
    const field = fields.find((f) => path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`)) ?? ''
    ;(out[field] ??= []).push(field === '' ? message : (match?.[2] ?? message))
  }
  return out
}
