import type { RowPieces } from '../../pipelines/connectors/store/store.ts'

/**
 * `bytes` handed over in pieces of at most `size` bytes through one buffer that is overwritten as
 * soon as each piece's promise resolves, as the event store does: an adapter that kept a piece
 * beyond that would store the garbage written over it.
 */
export function piecesOf(bytes: Buffer, size: number): RowPieces & { handed: number } {
  const buffer = Buffer.alloc(size)
  const given = {
    bytes: bytes.length,
    handed: 0,
    async pieces(sink: (piece: Buffer) => Promise<void>) {
      for (let at = 0; at < bytes.length; at += size) {
        const n = bytes.copy(buffer, 0, at, Math.min(at + size, bytes.length))
        await sink(buffer.subarray(0, n))
        given.handed++
        buffer.fill(0xff)
      }
    },
  }
  return given
}
