import { generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FcmReceived {
  project: string
  authorization: string
  body: { message: Record<string, unknown> }
}

export interface TokenRequest {
  grantType: string
  header: Record<string, unknown>
  claims: Record<string, unknown>
}

/** How the stand-in answers a registration token (default: 200). */
export type FcmAnswer =
  | { kind: 'unregistered' }
  | { kind: 'invalid-token' }
  | { kind: 'quota'; retryAfter?: string }
  | { kind: 'unavailable'; retryAfter?: string }
  | { kind: 'sender-mismatch' }
  | { kind: 'unauthenticated-once' }
  | { kind: 'payload-too-big' }

/**
 * Google's OAuth2 token endpoint and FCM HTTP v1, as Google documents them, on one local HTTP
 * server:
 * - `POST /token`: a form with grant_type jwt-bearer and an assertion (RS256, verified with the
 *   service account's public key; iss the client email, scope firebase.messaging, aud Google's
 *   token URL, at most an hour long) → `{access_token, expires_in, token_type}`; else 400
 *   invalid_grant.
 * - `POST /v1/projects/<project>/messages:send`: Bearer token issued above, else 401
 *   UNAUTHENTICATED; data values must be strings (400 INVALID_ARGUMENT with a BadRequest field
 *   violation, as FCM answers); then the answer set for the message's token, or 200 with
 *   `{"name": "projects/<project>/messages/<id>"}`. Errors carry FcmError details.
 */
export async function startFcmStandin(options: { clientEmail: string; publicKey: KeyObject }) {
  const issued = new Set<string>()
  const received: FcmReceived[] = []
  const tokenRequests: TokenRequest[] = []
  const answers = new Map<string, FcmAnswer>()
  let inFlight = 0
  let maxConcurrent = 0

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=UTF-8', ...headers })
      res.end(JSON.stringify(body))
    }
    if (req.method === 'POST' && req.url === '/token') {
      const form = new URLSearchParams(text)
      const claims = verifyAssertion(form.get('assertion') ?? '', options)
      tokenRequests.push({
        grantType: form.get('grant_type') ?? '',
        header: claims?.header ?? {},
        claims: claims?.claims ?? {},
      })
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer' || !claims)
        return json(400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' })
      const token = `ya29.${randomBytes(16).toString('hex')}`
      issued.add(token)
      return json(200, { access_token: token, expires_in: 3599, token_type: 'Bearer' })
    }
    const send = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.url ?? '')
    if (req.method !== 'POST' || !send) return json(404, { error: { code: 404, status: 'NOT_FOUND' } })
    const authorization = req.headers.authorization ?? ''
    if (!issued.has(authorization.replace(/^Bearer /, '')))
      return json(401, fcmError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'))
    const body = JSON.parse(text) as FcmReceived['body']
    const message = body.message
    const data = (message.data ?? {}) as Record<string, unknown>
    const badIndex = Object.values(data).findIndex((v) => typeof v !== 'string')
    if (badIndex >= 0) {
      const msg = `Invalid value at 'message.data[${badIndex}].value' (TYPE_STRING)`
      return json(400, {
        error: {
          code: 400,
          message: msg,
          status: 'INVALID_ARGUMENT',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.BadRequest',
              fieldViolations: [{ field: `message.data[${badIndex}].value`, description: msg }],
            },
          ],
        },
      })
    }
    const token = String(message.token)
    const answer = answers.get(token)
    if (answer?.kind === 'unauthenticated-once') {
      answers.delete(token)
      issued.clear()
      return json(401, fcmError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'))
    }
    received.push({ project: decodeURIComponent(send[1]!), authorization, body })
    switch (answer?.kind) {
      case 'unregistered':
        return json(404, fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'))
      case 'invalid-token':
        return json(
          400,
          fcmError(
            400,
            'INVALID_ARGUMENT',
            'The registration token is not a valid FCM registration token',
            'INVALID_ARGUMENT',
          ),
        )
      case 'payload-too-big':
        return json(400, {
          error: {
            code: 400,
            message: 'Message is too big',
            status: 'INVALID_ARGUMENT',
            details: [
              {
                '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError',
                errorCode: 'INVALID_ARGUMENT',
              },
              {
                '@type': 'type.googleapis.com/google.rpc.BadRequest',
                fieldViolations: [{ field: 'message', description: 'Message is too big' }],
              },
            ],
          },
        })
      case 'sender-mismatch':
        return json(403, fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'))
      case 'quota':
        return json(
          429,
          fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded.', 'QUOTA_EXCEEDED'),
          answer.retryAfter ? { 'Retry-After': answer.retryAfter } : {},
        )
      case 'unavailable':
        return json(
          503,
          fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'),
          answer.retryAfter ? { 'Retry-After': answer.retryAfter } : {},
        )
      default:
        return json(200, { name: `projects/${send[1]}/messages/${randomBytes(8).toString('hex')}` })
    }
  }

  const server = createServer((req, res) => {
    inFlight++
    maxConcurrent = Math.max(maxConcurrent, inFlight)
    res.on('close', () => inFlight--)
    handle(req, res).catch((err: unknown) => {
      res.writeHead(500)
      res.end(String(err))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    baseUrl: url,
    tokenUrl: `${url}/token`,
    received,
    tokenRequests,
    answers,
    maxConcurrent: () => maxConcurrent,
    /** Forget what was received and the concurrency seen (between tests). */
    reset() {
      received.length = 0
      tokenRequests.length = 0
      answers.clear()
      maxConcurrent = 0
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export type FcmStandin = Awaited<ReturnType<typeof startFcmStandin>>

const fcmError = (code: number, status: string, message: string, errorCode?: string) => ({
  error: {
    code,
    message,
    status,
    ...(errorCode && {
      details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode }],
    }),
  },
})

function verifyAssertion(assertion: string, options: { clientEmail: string; publicKey: KeyObject }) {
  const parts = assertion.split('.')
  if (parts.length !== 3) return undefined
  const [h, c, s] = parts as [string, string, string]
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>
  const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>
  const ok =
    header.alg === 'RS256' &&
    verify('RSA-SHA256', Buffer.from(`${h}.${c}`), options.publicKey, Buffer.from(s, 'base64url')) &&
    claims.iss === options.clientEmail &&
    claims.aud === 'https://oauth2.googleapis.com/token' &&
    String(claims.scope).split(' ').includes('https://www.googleapis.com/auth/firebase.messaging') &&
    Number(claims.exp) - Number(claims.iat) <= 3600
  return ok ? { header, claims } : undefined
}

/** A throwaway service account key file (RSA 2048), as the Firebase console hands one out. */
export function serviceAccount(projectId = 'sluice-test') {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return {
    json: {
      type: 'service_account',
      project_id: projectId,
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: `push@${projectId}.iam.gserviceaccount.com`,
      client_id: '1234567890',
      token_uri: 'https://oauth2.googleapis.com/token',
    },
    publicKey,
  }
}
