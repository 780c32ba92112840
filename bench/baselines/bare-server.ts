import http from 'node:http'
import { gunzip } from 'node:zlib'
import { INFLATE_CHUNK_BYTES } from '../../pipelines/events/gzip.ts'

/**
 * Baseline 1, the edge's ceiling: a bare Node HTTP server that reads and discards each body and
 * answers 202 with a body the size of Sluice's. Run as a child process; prints its port. With
 * `inflate` as its argument it also inflates gzip bodies before answering (on libuv's pool, in chunks
 * of the same size, as Sluice's edge checks them): the ceiling of an edge that must validate gzip.
 */
const inflate = process.argv[2] === 'inflate'
const answer = Buffer.from('{"transaction_id":"AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo"}')
let bytes = 0
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  const gzip = inflate && (req.headers['content-type'] ?? '').includes('gzip')
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length
    if (gzip) chunks.push(chunk)
  })
  req.on('end', () => {
    const reply = (status: number) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': answer.length })
      res.end(answer)
    }
    if (!gzip) return reply(202)
    gunzip(Buffer.concat(chunks), { chunkSize: INFLATE_CHUNK_BYTES }, (err) => reply(err ? 400 : 202))
  })
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`)
})
process.on('SIGTERM', () => {
  process.stdout.write(`received ${bytes}\n`)
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
