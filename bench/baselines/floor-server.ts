import http from 'node:http'
import { openDurableEnv } from '../../pipelines/connectors/bus/local-log/log-store.ts'
import { createGzipCheck } from '../../pipelines/events/gzip-check.ts'

/**
 * The edge floor: the least any edge does before a 202 that keeps its promises. A minimal Node
 * HTTP server (child process; argv = log directory; prints its port) that reads each body,
 * inflates a gzip body to check it (createGzipCheck, the check Sluice's edge runs: zlib on libuv's
 * pool, into output memory it reuses, nothing kept),
 * appends the body to an lmdb log opened with the local log's own durability settings
 * (`openDurableEnv`: every commit fsync'd before its promise resolves, commits of one event turn
 * grouped), and answers 202 once the append is durable (400 for bad gzip). What it leaves out is
 * what the spec does not make part of a 202: authentication, rate limits, transaction ids, headers
 * and the pipeline behind the log.
 *
 * Every body is kept under a key of its own, after the last one already in the log (a server
 * started again on the same log directory continues it), as the edge instance's
 * local log keeps every body: nothing consumes it during the bench. A ring of 1,024 keys (the floor
 * before `661b68e`) breaks the promise (a body acknowledged and then overwritten is lost) and keeps
 * its file at ~72 MB while the edge instance's file grows; growing a file costs each commit's
 * fdatasync a journal commit, ~150 µs of system CPU per 72 KB body on the 2-core bench machine,
 * which a ring never pays (docs/performance.md, "Measuring").
 */
const [dir] = process.argv.slice(2)
if (!dir) {
  process.stderr.write('usage: floor-server <log dir>\n')
  process.exit(2)
}
const env = openDurableEnv(dir)
const checkGzip = createGzipCheck()
const records = env.openDB<Buffer, number>({ name: 'records', encoding: 'binary' })
const answer = Buffer.from('{"transaction_id":"AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo"}')
let next = 0
for (const last of records.getKeys({ reverse: true, limit: 1 })) next = last + 1
let bytes = 0

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  const gzip = (req.headers['content-type'] ?? '').includes('gzip')
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length
    chunks.push(chunk)
  })
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
    const reply = (status: number) => {
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': answer.length })
      res.end(answer)
    }
    const append = () =>
      records.put(next++, body).then(
        () => reply(202),
        () => reply(503),
      )
    if (!gzip) return void append()
    void checkGzip(body, 64 * 1024 * 1024).then((check) => (check.kind === 'ok' ? append() : reply(400)))
  })
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : 0}\n`)
})
process.on('SIGTERM', () => {
  process.stdout.write(`received ${bytes}\n`)
  server.close(() => void env.close().finally(() => process.exit(0)))
  server.closeAllConnections()
})
