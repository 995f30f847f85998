import { describe, expect, it } from 'vitest';
import { checkDestination, checkUrlSyntax, isAllowlisted, isPublicAddress, resolveCheckedHost, type DestinationPolicy } from './destination';

const prod: DestinationPolicy = { requireHttps: true, allowlist: [] };
const dev: DestinationPolicy = { requireHttps: false, allowlist: [] };
const loopbackAllowed: DestinationPolicy = { requireHttps: false, allowlist: ['127.0.0.1/32', '::1/128'] };

const blockedAddresses = [
  // IPv4
  '127.0.0.1',
  '127.255.255.254',
  '10.0.0.1',
  '10.255.255.255',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.0.1',
  '100.64.0.1',
  '100.127.255.254',
  '0.0.0.0',
  '0.1.2.3',
  '255.255.255.255',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '192.0.2.1',
  '198.51.100.7',
  '203.0.113.9',
  '198.18.0.1',
  '192.0.0.8',
  // IPv6
  '::1',
  '::',
  'fe80::1',
  'febf::1',
  'fc00::1',
  'fd00:ec2::254',
  'ff02::1',
  'fec0::1',
  '2001:db8::1',
  '100::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:169.254.169.254',
  '::ffff:8.8.8.8',
  '64:ff9b::7f00:1',
  '64:ff9b::808:808',
  '64:ff9b:1::a00:1',
  '2002:7f00:1::1',
  '2002:808:808::1',
  '2001:0:4136:e378:8000:63bf:3fff:fdd2',
  '::7f00:1',
  '::127.0.0.1',
];

describe('isPublicAddress', () => {
  it.each(blockedAddresses)('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.215.14', '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4007:80e::200e'])('accepts %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each(['', 'localhost', 'not-an-ip', '1.2.3.4.5', '[::1]', '::1/128', '8.8.8.8 '])('refuses non-addresses (%j)', (text) => {
    expect(isPublicAddress(text)).toBe(false);
  });
});

describe('isAllowlisted', () => {
  it('matches v4 and v6 CIDRs, normalizing IPv4-mapped IPv6 to IPv4', () => {
    expect(isAllowlisted('127.0.0.1', ['127.0.0.1/32'])).toBe(true);
    expect(isAllowlisted('::ffff:127.0.0.1', ['127.0.0.1/32'])).toBe(true);
    expect(isAllowlisted('127.0.0.1', ['::ffff:127.0.0.1/128'])).toBe(true);
    expect(isAllowlisted('127.0.0.2', ['127.0.0.1/32'])).toBe(false);
    expect(isAllowlisted('10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(isAllowlisted('::1', ['::1/128'])).toBe(true);
    expect(isAllowlisted('::1', ['127.0.0.1/32'])).toBe(false);
    expect(isAllowlisted('127.0.0.1', ['::1/128'])).toBe(false);
  });

  it('ignores malformed entries (fail closed) and non-addresses', () => {
    expect(isAllowlisted('127.0.0.1', ['127.0.0.1', 'garbage', '127.0.0.1/33'])).toBe(false);
    expect(isAllowlisted('localhost', ['127.0.0.1/32'])).toBe(false);
    expect(isAllowlisted('127.0.0.1', [])).toBe(false);
  });
});

describe('checkUrlSyntax', () => {
  it.each([
    'http://127.0.0.1/hook',
    'http://127.0.0.1:8080/',
    'http://[::1]/',
    'http://0.0.0.0/',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1/',
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://192.168.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[fd00:ec2::254]/',
    'http://[fe80::1]/',
    'http://[::]/',
    'http://[2002:7f00:1::1]/',
    // Alternative spellings the URL parser turns into 127.0.0.1.
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://127.0.0.1./',
    'http://localhost/',
    'http://localhost:3000/',
    'http://LOCALHOST/',
    'http://localhost./',
    'http://api.localhost/',
  ])('refuses %s', (url) => {
    const r = checkUrlSyntax(url, dev);
    expect(r.ok).toBe(false);
  });

  it('accepts public destinations and returns the parsed URL', () => {
    for (const url of ['https://example.com/hooks?x=1', 'https://8.8.8.8/', 'https://[2606:4700:4700::1111]:8443/w']) {
      const r = checkUrlSyntax(url, prod);
      expect(r).toMatchObject({ ok: true });
      if (r.ok) expect(r.url.href).toBe(new URL(url).href);
    }
  });

  it('requires https when the policy says so', () => {
    expect(checkUrlSyntax('http://example.com/', prod)).toEqual({ ok: false, reason: 'URL must use https' });
    expect(checkUrlSyntax('http://example.com/', dev).ok).toBe(true);
  });

  it.each([
    ['ftp://example.com/', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['javascript:alert(1)', 'scheme'],
    ['gopher://example.com/', 'scheme'],
    ['/relative/path', 'absolute'],
    ['example.com', 'absolute'],
    ['', 'empty'],
    ['https://user:pass@example.com/', 'credentials'],
    ['https://user@example.com/', 'credentials'],
    ['https://example.com/#frag', 'fragment'],
    ['https://example.com/#', 'fragment'],
    [' https://example.com/', 'whitespace'],
    ['https://exa\nmple.com/', 'whitespace'],
    [`https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`, 'longer'],
  ])('refuses %j (%s)', (url, why) => {
    const r = checkUrlSyntax(url, prod);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(why);
  });

  it('accepts a URL of exactly 2048 characters', () => {
    const url = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;
    expect(url).toHaveLength(2048);
    expect(checkUrlSyntax(url, prod).ok).toBe(true);
  });

  it('lets allowlisted IP literals through, and defers localhost to resolution when an allowlist exists', () => {
    expect(checkUrlSyntax('http://127.0.0.1:3000/', loopbackAllowed).ok).toBe(true);
    expect(checkUrlSyntax('http://[::1]:3000/', loopbackAllowed).ok).toBe(true);
    expect(checkUrlSyntax('http://[::ffff:127.0.0.1]:3000/', loopbackAllowed).ok).toBe(true);
    expect(checkUrlSyntax('http://127.0.0.2/', loopbackAllowed).ok).toBe(false);
    expect(checkUrlSyntax('http://localhost:3000/', loopbackAllowed).ok).toBe(true);
  });
});

describe('checkDestination', () => {
  it('returns the checked addresses of IP literals without resolving', async () => {
    expect(await checkDestination('https://8.8.8.8/', prod)).toEqual({ ok: true, addresses: ['8.8.8.8'] });
    expect(await checkDestination('https://[2606:4700:4700::1111]/', prod)).toEqual({ ok: true, addresses: ['2606:4700:4700::1111'] });
  });

  it('refuses localhost and blocked literals as BLOCKED_DESTINATION', async () => {
    for (const url of ['http://localhost/', 'http://127.0.0.1/', 'http://[::1]/', 'http://169.254.169.254/', 'ftp://example.com/']) {
      expect(await checkDestination(url, dev)).toMatchObject({ ok: false, outcome: 'BLOCKED_DESTINATION' });
    }
  });

  it('resolves names and refuses when a resolved address is not allowed', async () => {
    // An allowlist that does not cover loopback: localhost passes the syntax check, then its records are refused.
    const r = await checkDestination('http://localhost/', { requireHttps: false, allowlist: ['10.0.0.0/8'] });
    expect(r).toMatchObject({ ok: false, outcome: 'BLOCKED_DESTINATION' });
    if (!r.ok) expect(r.reason).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/);
  });

  it('accepts localhost when every resolved address is allowlisted', async () => {
    const r = await checkDestination('http://localhost:3000/', loopbackAllowed);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.addresses.length).toBeGreaterThan(0);
      for (const a of r.addresses) expect(['127.0.0.1', '::1']).toContain(a);
    }
  });

  it('reports names that do not resolve as DNS_ERROR', async () => {
    expect(await checkDestination('https://nonexistent.invalid/', prod)).toMatchObject({ ok: false, outcome: 'DNS_ERROR' });
  });

  it('resolveCheckedHost rejects with EBLOCKED or the resolver code', async () => {
    await expect(resolveCheckedHost('localhost', dev)).rejects.toMatchObject({ code: 'EBLOCKED' });
    await expect(resolveCheckedHost('nonexistent.invalid', dev)).rejects.toMatchObject({ code: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN|ENODATA)$/) });
    expect(await resolveCheckedHost('8.8.8.8', prod)).toEqual([{ address: '8.8.8.8', family: 4 }]);
  });
});
