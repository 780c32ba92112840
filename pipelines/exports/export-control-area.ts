import type { ControlArea } from '../control/control-area.ts'
import {
  applyExportCommand,
  copyExportState,
  emptyExportState,
  exportStateNeeds,
  type ExportControlState,
  type ExportJobRow,
  type ExportPlanRow,
  type ExportStateNeeds,
  type MutableExportState,
} from './export-commands.ts'
import { readExportState } from './export-control-state.ts'
import { exportPayloads } from './export-payloads.ts'

/** Export jobs and plans in the control plane (registered by services/control/control-plane.ts). */
export const exportArea: ControlArea<
  'exports',
  typeof exportPayloads,
  ExportControlState,
  ExportStateNeeds,
  { export_jobs: ExportJobRow; export_plans: ExportPlanRow },
  MutableExportState
> = {
  name: 'exports',
  payloads: exportPayloads,
  tables: ['export_jobs', 'export_plans'],
  needs: exportStateNeeds,
  read: readExportState,
  copy: (state) => copyExportState(state ?? emptyExportState()),
  apply: applyExportCommand,
}
