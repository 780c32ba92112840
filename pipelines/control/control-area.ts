import type { z } from 'zod'
import type { Store } from '../connectors/store/store.ts'

/*
 * How an area (audiences, campaigns, push transports, exports, ...) takes part in the control
 * plane without the control plane knowing it: the composition root lists the areas
 * (services/control/control-plane.ts) and the applier, the decoder and the state reads loop over
 * them. The control plane itself owns only orgs, apps, keys and due jobs.
 */

/** A command's answer as the edge gives it: an HTTP status and a JSON body (`{"error"}` when refused). */
export interface ControlResult {
  status: number
  body: unknown
}

/** A control command as it travels on the control topic. */
export interface CommandEnvelope<K extends string = string, P = unknown> {
  v: 1
  /** A uuid drawn by the edge (or `${job}:${period_start}`): results and idempotency go by it. */
  id: string
  kind: K
  /** When the edge took it (ms since epoch): the rows' created_at and the floor of their version. */
  at: number
  payload: P
}

/** Command kinds and the schema of what each carries. */
export type PayloadSchemas = Readonly<Record<string, z.ZodType>>

/** The commands of a set of kinds: one envelope type per kind, its payload typed. */
export type CommandOf<P extends PayloadSchemas> = {
  [K in keyof P & string]: CommandEnvelope<K, z.infer<P[K]>>
}[keyof P & string]

/**
 * An area's part of the control plane. `Name` keys its state and its needs in the applier's;
 * `Rows` maps each of its tables to the type of its rows; `State` is what `read` gives and
 * `Working` the copy a batch changes.
 */
export interface ControlArea<
  Name extends string,
  P extends PayloadSchemas,
  State,
  Needs,
  Rows,
  Working = State,
> {
  readonly name: Name
  /** Its command kinds: decoded, and routed to `apply`, by the control plane. */
  readonly payloads: P
  /** Its tables, written one insert each per batch; journaled with the rows. */
  readonly tables: readonly (keyof Rows & string)[]
  /** What to read before applying these commands (all of the batch's: take your own kinds). */
  needs(commands: readonly CommandEnvelope[]): Needs
  read(store: Store, needs: Needs): Promise<State>
  /** A copy the batch may change; `state` absent: none was read (no rows). */
  copy(state: State | undefined): Working
  /** Applies one of its commands (pure): its answer, and its rows added to `writes`. */
  apply(state: Working, command: CommandOf<P>, writes: { [T in keyof Rows]: Rows[T][] }): ControlResult
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any area, whatever its types
export type AnyControlArea = ControlArea<string, PayloadSchemas, any, any, any, any>
