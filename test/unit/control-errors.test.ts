import { describe, expect, it } from 'vitest'
import { ControlUnavailableError } from '../../services/control/command-client.ts'
import { asControlAnswer, controlWrite } from '../../services/control/control-errors.ts'
import { ControlCommandError } from '../../services/control/control-store.ts'
import { SluiceError } from '../../services/shared/errors.ts'

describe('a control command failure as the API answer', () => {
  it('no answer in time is a 503 with Retry-After', () => {
    const answer = asControlAnswer(new ControlUnavailableError('no answer within 5000 ms', { cause: 'x' }))
    expect(answer).toBeInstanceOf(SluiceError)
    expect(answer).toMatchObject({ status: 503, code: 'control_unavailable', retriable: true })
    expect((answer as SluiceError).headers).toEqual({ 'Retry-After': '5' })
  })

  it.each([
    [400, 'bad_request'],
    [404, 'not_found'],
    [409, 'conflict'],
    [422, 'control_refused'],
  ])('a refusal with status %i keeps it (%s) and its message', (status, code) => {
    const answer = asControlAnswer(new ControlCommandError(status, 'app id taken'))
    expect(answer).toMatchObject({ status, code, message: 'app id taken' })
  })

  it('any other error is passed on unchanged', async () => {
    const other = new TypeError('bug')
    expect(asControlAnswer(other)).toBe(other)
    await expect(controlWrite(() => Promise.reject(other))).rejects.toBe(other)
    await expect(controlWrite(() => Promise.resolve(7))).resolves.toBe(7)
    await expect(
      controlWrite(() => Promise.reject(new ControlCommandError(404, 'no org 9'))),
    ).rejects.toMatchObject({
      status: 404,
      message: 'no org 9',
    })
  })
})
