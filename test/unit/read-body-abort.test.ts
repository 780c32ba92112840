import { connect } from 'node:net'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorHandler } from '../../services/edge/middleware/errors.ts'
import { readBoundedBody, readRequestBody } from '../../services/edge/read-body.ts'
import { listen, type HttpServer } from '../../services/edge/serve.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { waitFor } from '../helpers/wait-for.ts'

/** A client that hangs up half-way through its body is routine: one debug line, no stack trace. */
describe('an aborted request', () => {
  const logged: Record<string, unknown>[] = []
  let server: HttpServer
  let started = 0
  let handled = 0
  beforeAll(async () => {
    const logger = createLogger('debug', {
      write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>),
    })
    const app = new Hono()
    app.post('/upload', async (c) => {
      started++
      try {
        const body = await readBoundedBody(c.req.raw, 1_000_000)
        return c.json({ bytes: body.length })
      } finally {
        handled++
      }
    })
    // The upload path reads the Node request itself (readRequestBody), not the web Request.
    app.post('/direct', async (c) => {
      started++
      try {
        const body = await readRequestBody(c, 1_000)
        return c.json({ bytes: body.length, text: body.toString() })
      } finally {
        handled++
      }
    })
    app.onError(errorHandler(logger))
    server = await listen(app as never, '127.0.0.1', 0)
  })
  afterAll(() => server.close())

  it('logs one line at debug, and the server keeps serving', async () => {
    const socket = connect(server.port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    socket.write(
      'POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n',
    )
    socket.write('{"partial":')
    await waitFor(
      async () => started,
      (n) => n === 1,
      { what: 'the handler to start reading the body' },
    )
    socket.destroy()
    await waitFor(
      async () => handled,
      (n) => n === 1,
      { what: 'the handler to see the abort' },
    )
    const lines = await waitFor(
      async () => logged.filter((l) => l.path === '/upload'),
      (l) => l.length > 0,
      { what: 'the log line' },
    )
    expect(lines).toEqual([
      expect.objectContaining({
        level: 20,
        method: 'POST',
        msg: 'client closed the request before its body arrived',
      }),
    ])
    expect(lines[0]).not.toHaveProperty('err')
    expect(logged.filter((l) => (l.level as number) >= 50)).toEqual([])

    const res = await fetch(`http://127.0.0.1:${server.port}/upload`, { method: 'POST', body: 'hello' })
    expect(await res.json()).toEqual({ bytes: 5 })
  })

  it('reading the Node request itself: an abort is the same debug line, a body is whole, 413 at the limit', async () => {
    const socket = connect(server.port, '127.0.0.1')
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    const before = started
    socket.write(
      'POST /direct HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n',
    )
    socket.write('{"partial":')
    await waitFor(
      async () => started,
      (n) => n === before + 1,
      { what: 'the handler to start reading' },
    )
    socket.destroy()
    const lines = await waitFor(
      async () => logged.filter((l) => l.path === '/direct'),
      (l) => l.length > 0,
      { what: 'the log line' },
    )
    expect(lines).toEqual([
      expect.objectContaining({ level: 20, msg: 'client closed the request before its body arrived' }),
    ])

    const chunks = ['{"a":', '"é"', '}\n']
    const res = await fetch(`http://127.0.0.1:${server.port}/direct`, {
      method: 'POST',
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift()
          if (next === undefined) controller.close()
          else controller.enqueue(new TextEncoder().encode(next))
        },
      }),
      duplex: 'half',
    })
    expect(await res.json()).toEqual({ bytes: 11, text: '{"a":"é"}\n' })
    const big = await fetch(`http://127.0.0.1:${server.port}/direct`, {
      method: 'POST',
      body: 'x'.repeat(1_000),
    })
    expect(big.status).toBe(413)
    // Past the limit only by streaming (no Content-Length): refused as the bytes arrive.
    let sent = 0
    const streamed = await fetch(`http://127.0.0.1:${server.port}/direct`, {
      method: 'POST',
      body: new ReadableStream({
        pull(controller) {
          if (sent++ < 20) controller.enqueue(new Uint8Array(100))
          else controller.close()
        },
      }),
      duplex: 'half',
    })
    expect(streamed.status).toBe(413)
  })
})
