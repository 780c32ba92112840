import type { Scope } from '../../pipelines/control/credentials.ts'

export interface Principal {
  orgId: number
  apiKey: string
  scopes: Scope[]
}

/** Hono environment of the edge: what middleware puts on the context. */
export interface EdgeEnv {
  Variables: {
    principal: Principal
  }
}
