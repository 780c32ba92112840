/**
 * How long the store-outage tests keep the store away: 10 s by default, so that CI (2 cores) runs
 * them in well under a minute each; SLUICE_TEST_OUTAGE_MS=30000 gives the 30 s outage that
 * docs/scaling.md reports the drain time of.
 */
export function outageMs(): number {
  const given = Number(process.env.SLUICE_TEST_OUTAGE_MS)
  return Number.isFinite(given) && given > 0 ? given : 10_000
}
