import { expect, test } from 'vitest';
import { clientAddress, parseTrustedProxies } from './client-address';

const proxies = parseTrustedProxies('10.0.0.0/8, 127.0.0.1, fd00::/8');

test('an untrusted peer: its own address, X-Forwarded-For ignored', () => {
  expect(clientAddress('203.0.113.9', '198.51.100.1', proxies)).toBe('203.0.113.9');
  expect(clientAddress('203.0.113.9', undefined, [])).toBe('203.0.113.9');
  expect(clientAddress('10.0.0.2', '198.51.100.1', [])).toBe('10.0.0.2');
});

test('a trusted peer: the rightmost address no trusted proxy wrote', () => {
  expect(clientAddress('10.0.0.2', '198.51.100.1', proxies)).toBe('198.51.100.1');
  expect(clientAddress('::ffff:127.0.0.1', '198.51.100.1', proxies)).toBe('198.51.100.1');
  // A client's forged entry on the left is not believed: the proxy appended the real one.
  expect(clientAddress('10.0.0.2', '1.2.3.4, 198.51.100.1, 10.1.1.1', proxies)).toBe('198.51.100.1');
  expect(clientAddress('fd00::1', '2001:db8::5', proxies)).toBe('2001:db8::5');
  expect(clientAddress('10.0.0.2', ['198.51.100.1', '10.0.0.3'], proxies)).toBe('198.51.100.1');
});

test('only trusted hops, or a malformed entry: the last good address', () => {
  expect(clientAddress('10.0.0.2', '10.0.0.3', proxies)).toBe('10.0.0.3');
  expect(clientAddress('10.0.0.2', 'junk, 198.51.100.1', proxies)).toBe('198.51.100.1');
  expect(clientAddress('10.0.0.2', '198.51.100.1, junk', proxies)).toBe('10.0.0.2');
});

test('a bad TRUST_PROXY entry is named', () => {
  expect(() => parseTrustedProxies('10.0.0.0/8, proxy.local')).toThrow('"proxy.local" is not an address or a CIDR');
  expect(parseTrustedProxies('')).toEqual([]);
});
