/**
 * Who sends a request: the credentials found the way ClickHouse's HTTP handler finds them, checked by
 * the port's `authenticate`.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { ErrorCode, SqlPortError } from './clickhouse-protocol.ts'
import { header } from './http-request.ts'

export type Authenticate = (user: string, password: string) => boolean

/** The request's user, or AUTHENTICATION_FAILED. */
export function authenticateRequest(
  headers: IncomingHttpHeaders,
  params: URLSearchParams,
  authenticate: Authenticate,
): string {
  const { user, password } = credentialsOf(headers, params)
  if (!authenticate(user, password)) {
    throw new SqlPortError(
      ErrorCode.AUTHENTICATION_FAILED,
      `${user}: Authentication failed: password is incorrect, or there is no user with such name`,
    )
  }
  return user
}

/**
 * `authenticate` over a fixed user table. Passwords are compared as SHA-256 digests with
 * timingSafeEqual, so neither their length nor their content shows in the timing.
 */
export function passwordAuthenticator(users: Readonly<Record<string, string>>): Authenticate {
  const digests = new Map(Object.entries(users).map(([user, password]) => [user, sha256(password)]))
  const decoy = sha256(randomBytes(32).toString('hex'))
  return (user, password) => {
    const expected = digests.get(user)
    const same = timingSafeEqual(sha256(password), expected ?? decoy)
    return expected !== undefined && same
  }
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest()

/** User and password the way ClickHouse's HTTP handler finds them (authenticateUserByHTTP). */
function credentialsOf(
  headers: IncomingHttpHeaders,
  params: URLSearchParams,
): { user: string; password: string } {
  const failed = (message: string) => new SqlPortError(ErrorCode.AUTHENTICATION_FAILED, message)
  const mixed = (a: string, b: string) =>
    failed(`Invalid authentication: it is not allowed to use ${a} and ${b} simultaneously`)
  const headerUser = header(headers, 'x-clickhouse-user') ?? ''
  const headerKey = header(headers, 'x-clickhouse-key') ?? ''
  const authorization = header(headers, 'authorization')
  const inParams = params.has('user') || params.has('password')

  if (headerUser !== '' || headerKey !== '') {
    if (headerUser === '') throw failed('Got an empty user name from X-ClickHouse HTTP headers')
    if (authorization !== undefined) throw mixed('X-ClickHouse HTTP headers', 'Authorization HTTP header')
    if (inParams) throw mixed('X-ClickHouse HTTP headers', 'authentication via parameters')
    return { user: headerUser, password: headerKey }
  }
  if (authorization !== undefined) {
    if (inParams) throw mixed('Authorization HTTP header', 'authentication via parameters')
    const space = authorization.indexOf(' ')
    const scheme = space === -1 ? authorization : authorization.slice(0, space)
    if (scheme.toLowerCase() !== 'basic') {
      throw failed(`Invalid authentication: '${scheme}' HTTP Authorization scheme is not supported`)
    }
    const decoded = Buffer.from(authorization.slice(space + 1).trim(), 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = colon === -1 ? decoded : decoded.slice(0, colon)
    if (user === '') throw failed('Got an empty user name from Authorization HTTP header')
    return { user, password: colon === -1 ? '' : decoded.slice(colon + 1) }
  }
  const user = params.get('user') ?? 'default'
  if (user === '') throw failed('Got an empty user name from authentication via parameters')
  return { user, password: params.get('password') ?? '' }
}
