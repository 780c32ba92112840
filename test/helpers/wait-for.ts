/** Poll until `probe` returns a value that passes `done`, or fail after the deadline. */
export async function waitFor<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  { timeoutMs = 20_000, intervalMs = 50, what = 'condition' } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: T | undefined
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      last = await probe()
      if (done(last)) return last
    } catch (err) {
      lastError = err
    }
    await new Promise((r) => setTimeout(r, intervalMs))
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}; last value: ${describe(last)}${
      lastError
        ? `; last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`
        : ''
    }`,
  )
}

function describe(value: unknown): string {
  if (value instanceof Map) return `Map(${value.size})`
  if (value instanceof Set) return `Set(${value.size})`
  return JSON.stringify(value)
}
