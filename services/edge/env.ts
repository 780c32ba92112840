import type { Scope } from '../../schemas/admin.ts'

export interface Principal {
  orgId: number
  apiKey: string
  scopes: Scope[]
}

/** The per-address limit on failed authentications, bound to this request's client. */
export interface AuthAttempts {
  /** Throws 429 while the client's address has failed too often of late. */
  check(): void
  /** Counts one failed authentication of the client's address. */
  failed(): void
}

/** Hono environment of the edge: what middleware puts on the context. */
export interface EdgeEnv {
  Variables: {
    principal: Principal
    /** Absent when the edge runs without the limit (tests that build routers alone). */
    authAttempts?: AuthAttempts
  }
}
