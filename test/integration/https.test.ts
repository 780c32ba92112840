import { copyFile, readFile } from 'node:fs/promises'
import { request as httpsRequest } from 'node:https'
import { connect as http2Connect } from 'node:http2'
import { join } from 'node:path'
import { connect as tlsConnect } from 'node:tls'
import { X509Certificate } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SCHEMA_URL, lines, uuid } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

const FIXTURES = fileURLToPath(new URL('../fixtures/tls/', import.meta.url))

/** The edge over HTTPS (issue 12 §4): real TLS clients, HTTP/2 by ALPN, a new certificate on SIGHUP. */
describe('HTTPS at the edge', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let sluice: InProcessSluice
  let ca: Buffer
  let port: number
  let auth: string

  /** An HTTPS request by Node's own client, trusting only the test CA. */
  function get(path: string, headers: Record<string, string> = {}, method = 'GET', body?: string) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, path, method, ca: [ca, caB], headers, servername: 'localhost' },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
          )
        },
      )
      req.on('error', reject)
      req.end(body)
    })
  }
  let caB: Buffer

  const servedCertificate = () =>
    new Promise<string>((resolve, reject) => {
      const socket = tlsConnect(
        { host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false },
        () => {
          const fingerprint = socket.getPeerX509Certificate()?.fingerprint256 ?? ''
          socket.end()
          resolve(fingerprint)
        },
      )
      socket.on('error', reject)
    })

  beforeAll(async () => {
    dir = await tempDir('https')
    ca = await readFile(join(FIXTURES, 'cert-a.pem'))
    caB = await readFile(join(FIXTURES, 'cert-b.pem'))
    await copyFile(join(FIXTURES, 'cert-a.pem'), join(dir.path, 'cert.pem'))
    await copyFile(join(FIXTURES, 'key-a.pem'), join(dir.path, 'key.pem'))
    sluice = await startInProcess({
      SLUICE_TLS_CERT: join(dir.path, 'cert.pem'),
      SLUICE_TLS_KEY: join(dir.path, 'key.pem'),
    })
    expect(sluice.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    port = sluice.running.port!
  })
  afterAll(async () => {
    await sluice?.close()
    await dir?.cleanup()
  })

  it('serves the API over TLS to a client that checks the certificate', async () => {
    // Tenants through the admin API, over the same TLS port.
    const org = JSON.parse(
      (
        await get(
          '/admin/v1/orgs',
          { Authorization: 'Bearer test-admin-token-0123456789', 'Content-Type': 'application/json' },
          'POST',
          JSON.stringify({ name: 'tls' }),
        )
      ).body,
    ) as { id: number }
    const adminHeaders = {
      Authorization: 'Bearer test-admin-token-0123456789',
      'Content-Type': 'application/json',
    }
    await get(
      `/admin/v1/orgs/${org.id}/apps`,
      adminHeaders,
      'POST',
      JSON.stringify({ name: 'tls-app', app_id: 'tls-app' }),
    )
    const key = JSON.parse((await get(`/admin/v1/orgs/${org.id}/keys`, adminHeaders, 'POST', '{}')).body) as {
      api_key: string
      api_secret: string
    }
    auth = `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`
    const check = await get('/v1/auth/check', { Authorization: auth })
    expect(check.status).toBe(200)
    expect(JSON.parse(check.body)).toMatchObject({ org_id: org.id })

    const upload = await get(
      '/v0/uploads',
      { Authorization: auth, 'Content-Type': 'application/json' },
      'POST',
      lines([
        {
          schema_url: SCHEMA_URL,
          app_uuid: 'tls-app',
          customer_id: 'c',
          event_name: 'e',
          event_time: Date.now(),
          uuid: uuid(),
        },
      ]),
    )
    expect(upload.status).toBe(202)
    expect(JSON.parse(upload.body)).toHaveProperty('transaction_id')

    // A client that trusts nothing refuses the self-signed certificate: this really is TLS.
    await expect(fetch(`${sluice.url}/healthz`)).rejects.toThrow()
  })

  it('offers HTTP/2 by ALPN', async () => {
    const session = http2Connect(`https://localhost:${port}`, { ca })
    try {
      const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const stream = session.request({ ':path': '/v1/auth/check', authorization: auth })
        let status = 0
        const chunks: Buffer[] = []
        stream.on('response', (headers) => (status = Number(headers[':status'])))
        stream.on('data', (c: Buffer) => chunks.push(c))
        stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString() }))
        stream.on('error', reject)
        stream.end()
      })
      expect(session.alpnProtocol).toBe('h2')
      expect(status).toBe(200)
      expect(JSON.parse(body)).toHaveProperty('org_id')
    } finally {
      session.close()
    }
  })

  it('takes a new certificate on SIGHUP without a restart', async () => {
    const a = new X509Certificate(ca).fingerprint256
    const b = new X509Certificate(caB).fingerprint256
    expect(await servedCertificate()).toBe(a)
    await copyFile(join(FIXTURES, 'cert-b.pem'), join(dir.path, 'cert.pem'))
    await copyFile(join(FIXTURES, 'key-b.pem'), join(dir.path, 'key.pem'))
    process.kill(process.pid, 'SIGHUP')
    await waitFor(servedCertificate, (f) => f === b, { what: 'the new certificate', timeoutMs: 10_000 })
    expect((await get('/v1/auth/check', { Authorization: auth })).status).toBe(200)
  })
})
