import { BlockList, isIP } from 'node:net'

/** Proxies whose X-Forwarded-For is believed: addresses or CIDR ranges (SLUICE_TRUSTED_PROXIES). */
export function trustedProxyList(entries: readonly string[]): BlockList {
  const list = new BlockList()
  for (const entry of entries) {
    const [address = '', bits] = entry.split('/')
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(bits), family)
  }
  return list
}

/**
 * The client's address: the socket's peer, unless that peer is a trusted proxy. Then the
 * X-Forwarded-For hops are read right to left (each proxy appends the address it received from)
 * and the first one that is not a trusted proxy is the client. Without trusted proxies the header
 * is ignored: any client can write it.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: BlockList | undefined,
): string {
  let address = normaliseAddress(peer ?? 'unknown')
  if (!trusted || !forwardedFor) return address
  const hops = forwardedFor.split(',').map((hop) => normaliseAddress(hop.trim()))
  while (isTrusted(address, trusted)) {
    const hop = hops.pop()
    if (hop === undefined || hop === '') break
    address = hop
  }
  return address
}

/**
 * What a per-address limit counts by: an IPv4 address, or an IPv6 address's /64 (one subscriber
 * usually holds a whole /64, so counting single IPv6 addresses would let one client use 2^64).
 */
export function addressLimitKey(address: string): string {
  if (isIP(address) !== 6) return address
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`
}

/**
 * An address as the edge compares it: lower case, without an IPv6 zone, and an IPv4-mapped IPv6
 * address (a dual-stack socket reports IPv4 peers so) as its IPv4 address. Runs per request on
 * the upload path (require-https.ts): no regular expression unless the address is mapped.
 */
export function normaliseAddress(address: string): string {
  const zone = address.indexOf('%')
  const bare = (zone < 0 ? address : address.slice(0, zone)).toLowerCase()
  if (!bare.startsWith('::ffff:')) return bare
  return MAPPED_IPV4.exec(bare)?.[1] ?? bare
}

const MAPPED_IPV4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/

/** Whether a normalised address is one of the trusted proxies. */
export function isTrusted(address: string, trusted: BlockList): boolean {
  const family = isIP(address)
  return family !== 0 && trusted.check(address, family === 6 ? 'ipv6' : 'ipv4')
}

/** The eight groups of an IPv6 address, without leading zeros (`::` and a dotted tail expanded). */
function ipv6Groups(address: string): string[] {
  let text = address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16))
}
