// Placeholder until the distributed-mode services are wired in (see test/helpers/distributed.ts).
export default function setup() {
  return () => undefined
}
