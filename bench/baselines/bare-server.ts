import http from 'node:http'

/**
 * The bare server, for information: a Node HTTP server that reads and discards each body and
 * answers 202 with a body the size of Sluice's; no promise of a 202 is kept (compare the floor,
 * floor-server.ts). Run as a child process; prints its port.
 */
const answer = Buffer.from('{"transaction_id":"AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo"}')
let bytes = 0
const server = http.createServer((req, res) => {
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length
  })
  req.on('end', () => {
    res.writeHead(202, { 'Content-Type': 'application/json', 'Content-Length': answer.length })
    res.end(answer)
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
