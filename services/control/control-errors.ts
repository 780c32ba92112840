import { badRequest, conflict, notFound, SluiceError } from '../shared/errors.ts'
import { ControlUnavailableError } from './command-client.ts'
import { ControlCommandError } from './control-store.ts'

/**
 * A control command's failure as the API's answer. No answer within SLUICE_CONTROL_WAIT_MS is a
 * 503 with Retry-After: the command may still be applied, so a client retries rather than
 * assuming it failed. A refusal keeps the applier's status (400, 404, 409, or another).
 * Anything else is rethrown as it is.
 */
export function asControlAnswer(err: unknown): unknown {
  if (err instanceof ControlUnavailableError)
    return new SluiceError('control_unavailable', 503, err.message, {
      retriable: true,
      headers: { 'Retry-After': '5' },
      cause: err.cause,
    })
  if (err instanceof ControlCommandError) {
    if (err.status === 400) return badRequest(err.message)
    if (err.status === 404) return notFound(err.message)
    if (err.status === 409) return conflict(err.message)
    return new SluiceError('control_refused', err.status, err.message)
  }
  return err
}

/** Runs a control write, its failure as the API's answer (asControlAnswer). */
export async function controlWrite<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    throw asControlAnswer(err)
  }
}
