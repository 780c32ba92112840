import { createPublicKey, generateKeyPairSync, verify, type KeyObject } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

const TLS = fileURLToPath(new URL('../fixtures/tls/', import.meta.url))

/** One request as the stand-in received it. */
export interface ApnsReceived {
  method: string
  path: string
  token: string
  headers: Record<string, string>
  body: unknown
  /** The provider token's parts, verified against the team's public key. */
  jwt: { header: Record<string, unknown>; claims: Record<string, unknown> }
}

/** How the stand-in answers a device token (default: 200). */
export interface ApnsAnswer {
  status: number
  reason?: string
  retryAfter?: string
}

/**
 * A local APNs as Apple documents its provider API: HTTP/2 over TLS (the test fixture's
 * self-signed certificate for 127.0.0.1), `POST /3/device/<token>`, a provider JWT (ES256, `kid`
 * the key id, `iss` the team id, `iat` within the hour) verified with the .p8 key's public key,
 * `apns-topic` required, `apns-id` echoed; 200 with an empty body, errors as `{"reason": ...}`
 * (410 with a `timestamp`). A test sets the answer per device token.
 */
export async function startApnsStandin(options: { teamId: string; keyId: string; publicKey: KeyObject }) {
  const [cert, key] = await Promise.all([readFile(`${TLS}cert-a.pem`), readFile(`${TLS}key-a.pem`)])
  const received: ApnsReceived[] = []
  const answers = new Map<string, ApnsAnswer>()
  let maxConcurrent = 0
  let inFlight = 0
  const sessions = new Set<http2.ServerHttp2Session>()
  const server = http2.createSecureServer({ cert, key, allowHTTP1: false })
  server.on('session', (session) => {
    sessions.add(session)
    session.on('close', () => sessions.delete(session))
  })
  server.on('stream', (stream, headers) => {
    inFlight++
    maxConcurrent = Math.max(maxConcurrent, inFlight)
    const chunks: Buffer[] = []
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => {
      inFlight--
      const apnsId = String(headers['apns-id'] ?? 'b6a8c2a0-0000-4000-8000-000000000000')
      const reply = (status: number, reason?: string, extra: Record<string, string> = {}) => {
        stream.respond({ ':status': status, 'apns-id': apnsId, ...extra })
        stream.end(
          reason === undefined
            ? undefined
            : JSON.stringify({ reason, ...(status === 410 && { timestamp: Date.now() }) }),
        )
      }
      const path = String(headers[':path'])
      const match = /^\/3\/device\/([0-9A-Za-z]+)$/.exec(path)
      if (headers[':method'] !== 'POST') return reply(405, 'MethodNotAllowed')
      if (!match) return reply(404, 'BadPath')
      const jwt = verifyJwt(String(headers.authorization ?? ''), options)
      if (!jwt) return reply(403, 'InvalidProviderToken')
      if (!headers['apns-topic']) return reply(400, 'MissingTopic')
      let body: unknown
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      } catch {
        return reply(400, 'PayloadEmpty')
      }
      const plain: Record<string, string> = {}
      for (const [k, v] of Object.entries(headers))
        if (!k.startsWith(':') && typeof v === 'string') plain[k] = v
      received.push({ method: 'POST', path, token: match[1]!, headers: plain, body, jwt })
      const answer = answers.get(match[1]!)
      if (!answer || answer.status === 200) return reply(200)
      reply(answer.status, answer.reason, answer.retryAfter ? { 'retry-after': answer.retryAfter } : {})
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    host: '127.0.0.1',
    port,
    ca: cert,
    received,
    answers,
    /** Most streams the stand-in had open at once (HTTP/2 multiplexing on one connection). */
    maxConcurrent: () => maxConcurrent,
    /** Forget what was received and the concurrency seen (between tests). */
    reset() {
      received.length = 0
      answers.clear()
      maxConcurrent = 0
    },
    connections: () => sessions.size,
    async close() {
      for (const s of sessions) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export type ApnsStandin = Awaited<ReturnType<typeof startApnsStandin>>

function verifyJwt(authorization: string, options: { teamId: string; keyId: string; publicKey: KeyObject }) {
  const m = /^bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/i.exec(authorization)
  if (!m) return undefined
  const [, h, c, s] = m as unknown as [string, string, string, string]
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>
  const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>
  const valid = verify(
    'sha256',
    Buffer.from(`${h}.${c}`),
    { key: options.publicKey, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'),
  )
  const iat = Number(claims.iat)
  if (
    !valid ||
    header.alg !== 'ES256' ||
    header.kid !== options.keyId ||
    claims.iss !== options.teamId ||
    !(Math.abs(Date.now() / 1000 - iat) < 3600)
  )
    return undefined
  return { header, claims }
}

/** A throwaway .p8 key (EC P-256, PKCS#8 PEM, as Apple hands them out) and its public key. */
export function p8Key() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  return {
    pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: createPublicKey(publicKey.export({ type: 'spki', format: 'pem' })),
  }
}
