/**
 * A buffer that grows as bytes are appended, doubling so that appends cost amortised O(1): the base
 * of the writers that build bytes in place instead of strings (RowBinaryWriter: engine input;
 * LineBuffer: the file transport's lines). Subclasses add their encodings and write into
 * `buffer` at `at` after `reserve`.
 */
export class GrowingBuffer {
  protected buffer: Buffer
  protected at = 0

  constructor(initialBytes = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes)
  }

  /** Bytes written so far. */
  get length(): number {
    return this.at
  }

  /** The bytes written (a view, valid until the next write). */
  view(): Buffer {
    return this.buffer.subarray(0, this.at)
  }

  /** Empty again, keeping the memory. */
  clear(): void {
    this.at = 0
  }

  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.at + n <= this.buffer.length) return
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.at + n))
    this.buffer.copy(grown, 0, 0, this.at)
    this.buffer = grown
  }

  /** Bytes appended as they are (already encoded pieces, built once). */
  append(b: Buffer): void {
    const n = b.length
    this.reserve(n)
    // Short pieces (`","install_uuid":` …) unit by unit: cheaper than a call into C++.
    if (n <= 32) {
      const buffer = this.buffer
      const at = this.at
      for (let i = 0; i < n; i++) buffer[at + i] = b[i]!
    } else b.copy(this.buffer, this.at)
    this.at += n
  }
}
