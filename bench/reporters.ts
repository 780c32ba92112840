import type { Reporters } from './report.ts'
import { campaignReporter } from './scenarios/campaigns.ts'
import { dashboardReporter } from './scenarios/dashboard.ts'
import { exportReporter } from './scenarios/exports.ts'
import { freshnessReporter } from './scenarios/freshness-report.ts'
import { importReporter } from './scenarios/imports.ts'
import { pushReporter } from './scenarios/push.ts'
import { queryReporter } from './scenarios/query.ts'
import { segmentationReporter } from './scenarios/segmentation.ts'
import { storageReporter } from './scenarios/storage.ts'

/**
 * The scenarios that run on their own and hand the report their figures (bench/figures.ts), in the
 * order of the summary and report.md. A new such scenario adds its reporter here.
 */
export const REPORTERS: Reporters = [
  freshnessReporter,
  segmentationReporter,
  queryReporter,
  pushReporter,
  campaignReporter,
  exportReporter,
  importReporter,
  dashboardReporter,
  storageReporter,
]
