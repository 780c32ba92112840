import type { DashboardApp, DashboardDeps } from '../context.ts'

export function registerAudiences(_app: DashboardApp, _deps: DashboardDeps) {}
