/**
 * The one error type of Sluice: a stable machine `code`, the HTTP status it maps to, and whether a
 * retry may succeed. The edge's single onError turns it into `{"error": message}`.
 */
export class SluiceError extends Error {
  readonly code: string
  readonly status: number
  readonly retriable: boolean
  readonly extra: Record<string, unknown> | undefined
  readonly headers: Record<string, string> | undefined

  constructor(
    code: string,
    status: number,
    message: string,
    opts: {
      retriable?: boolean
      extra?: Record<string, unknown>
      headers?: Record<string, string>
      cause?: unknown
    } = {},
  ) {
    super(message, { cause: opts.cause })
    this.name = 'SluiceError'
    this.code = code
    this.status = status
    this.retriable = opts.retriable ?? false
    this.extra = opts.extra
    this.headers = opts.headers
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) =>
  new SluiceError('bad_request', 400, message, extra ? { extra } : {})
export const unauthorized = () => new SluiceError('unauthorized', 401, 'invalid credentials')
export const forbidden = (message: string) => new SluiceError('forbidden', 403, message)
export const notFound = (message = 'not found') => new SluiceError('not_found', 404, message)
export const conflict = (message: string) => new SluiceError('conflict', 409, message)
export const payloadTooLarge = (message: string) => new SluiceError('payload_too_large', 413, message)
export const unsupportedMediaType = (message: string) =>
  new SluiceError('unsupported_media_type', 415, message)
export const tooManyRequests = (retryAfterSeconds: number, message = 'rate limit exceeded') =>
  new SluiceError('rate_limited', 429, message, {
    retriable: true,
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  })
export const unavailable = (retryAfterSeconds: number, message: string, cause?: unknown) =>
  new SluiceError('unavailable', 503, message, {
    retriable: true,
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    ...(cause !== undefined && { cause }),
  })
