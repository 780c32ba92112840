import { describeIssues, type Issue } from '../../pipelines/campaigns/validate-campaign.ts'
import { SluiceError } from '../shared/errors.ts'

/** A body that parses but breaks rules: 422, `error` the first broken rule, `errors` all of them, each naming its JSON path. */
export function unprocessable(issues: readonly Issue[]): SluiceError {
  const errors = describeIssues(issues)
  return new SluiceError('unprocessable', 422, errors[0] ?? 'invalid campaign', { extra: { errors } })
}
