// Entry of each piscina thread: the project is TypeScript run through tsx, and worker threads do
// not inherit the main thread's loader, so each registers it before loading the task module.
import { register } from 'tsx/esm/api'

register()
const tasks = await import('../../pipelines/cpu/tasks.ts')
export default tasks.default
