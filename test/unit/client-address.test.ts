import { describe, expect, it } from 'vitest'
import { addressLimitKey, clientAddress, trustedProxyList } from '../../services/edge/client-address.ts'

describe('clientAddress', () => {
  it('is the socket peer, and ignores X-Forwarded-For without trusted proxies', () => {
    expect(clientAddress('203.0.113.7', '198.51.100.1', undefined)).toBe('203.0.113.7')
    expect(clientAddress('::ffff:203.0.113.7', undefined, undefined)).toBe('203.0.113.7')
    expect(clientAddress(undefined, undefined, undefined)).toBe('unknown')
  })

  it('reads X-Forwarded-For right to left through trusted proxies only', () => {
    const trusted = trustedProxyList(['10.0.0.0/8', '192.0.2.1', 'fd00::/8'])
    // The client wrote a hop of its own on the left; the trusted proxy appended the real one.
    expect(clientAddress('10.1.2.3', '6.6.6.6, 198.51.100.9', trusted)).toBe('198.51.100.9')
    // Two trusted proxies in a row.
    expect(clientAddress('::ffff:10.1.2.3', '198.51.100.9, 192.0.2.1', trusted)).toBe('198.51.100.9')
    expect(clientAddress('fd00::5', '2001:db8::1', trusted)).toBe('2001:db8::1')
    // A peer that is not trusted is the client, whatever the header says.
    expect(clientAddress('203.0.113.7', '198.51.100.9', trusted)).toBe('203.0.113.7')
    // A trusted proxy with no header is itself the client.
    expect(clientAddress('10.1.2.3', undefined, trusted)).toBe('10.1.2.3')
    expect(clientAddress('10.1.2.3', '10.9.9.9', trusted)).toBe('10.9.9.9')
  })
})

describe('addressLimitKey', () => {
  it('keeps IPv4 addresses and counts IPv6 ones by their /64', () => {
    expect(addressLimitKey('203.0.113.7')).toBe('203.0.113.7')
    expect(addressLimitKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64')
    expect(addressLimitKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64')
    expect(addressLimitKey('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(addressLimitKey('::1')).toBe('0:0:0:0::/64')
    expect(addressLimitKey('64:ff9b::198.51.100.9')).toBe('64:ff9b:0:0::/64')
    expect(addressLimitKey('unknown')).toBe('unknown')
  })
})
