import { createGunzip, gunzipSync, constants } from 'node:zlib'

export type GunzipCheck = { kind: 'ok'; inflatedBytes: number } | { kind: 'invalid' } | { kind: 'too_large' }

/**
 * Check that a body is complete, valid gzip whose inflated size stays under `maxBytes`, without
 * keeping the inflated bytes (the edge forwards the compressed body). Inflation runs on libuv's
 * thread pool, off the event loop.
 */
export function checkGzip(body: Buffer, maxBytes: number): Promise<GunzipCheck> {
  return new Promise((resolve) => {
    const gunzip = createGunzip()
    let inflated = 0
    let settled = false
    const settle = (result: GunzipCheck) => {
      if (settled) return
      settled = true
      resolve(result)
    }
    gunzip.on('data', (chunk: Buffer) => {
      inflated += chunk.length
      if (inflated >= maxBytes) {
        settle({ kind: 'too_large' })
        gunzip.destroy()
      }
    })
    gunzip.on('error', () => settle({ kind: 'invalid' }))
    gunzip.on('end', () => settle({ kind: 'ok', inflatedBytes: inflated }))
    gunzip.end(body)
  })
}

/** Inflate with a hard cap (worker side); throws RangeError when the cap is reached. */
export function gunzipBounded(body: Buffer | Uint8Array, maxBytes: number): Buffer {
  return gunzipSync(body, { maxOutputLength: maxBytes, finishFlush: constants.Z_SYNC_FLUSH })
}
