import { describe, expect, it } from 'vitest';
import { checkCallbackUrl, checkResolvedHost, filteringLookup, publicAddress } from '../../src/callbacks/address-policy.js';
import { testResolver } from '../helpers/service.js';

const policy = { allowHttpLoopback: false, allowedHosts: [] };

/** Runs the connect-time lookup and says whether it refused. */
function lookupRefuses(addresses: string[]): Promise<boolean> {
  const lookup = filteringLookup(policy, testResolver({ 'rebind.example': addresses }));
  return new Promise((resolve) => lookup('rebind.example', { all: true }, (err) => resolve(err !== null)));
}

describe('IPv6 spellings of IPv4 addresses are judged as the IPv4 address (SSRF)', () => {
  const internal = [
    'https://[::7f00:1]/', // IPv4-compatible 127.0.0.1
    'https://[::127.0.0.1]/',
    'https://[0:0:0:0:0:0:127.0.0.1]/',
    'https://[::a00:1]/', // 10.0.0.1
    'https://[::a9fe:a9fe]/', // 169.254.169.254, the metadata address
    'https://[::ffff:127.0.0.1]/', // IPv4-mapped
    'https://[::ffff:a9fe:a9fe]/',
    'https://[::ffff:0:127.0.0.1]/', // IPv4-translated (RFC 6145)
    'https://[64:ff9b::7f00:1]/', // NAT64
  ];
  it.each(internal)('IPv4-compatible or -mapped literal %s was accepted as a callback URL', (url) => {
    expect(() => checkCallbackUrl(url, policy)).toThrow(expect.objectContaining({ code: 'callback_url_refused' }));
  });

  it('names the IPv4 range in the refusal', () => {
    expect(() => checkCallbackUrl('https://[::127.0.0.1]/', policy)).toThrow(/loopback range/);
    expect(() => checkCallbackUrl('https://[::10.1.2.3]/', policy)).toThrow(/private range/);
  });

  it('IPv6 loopback and unspecified stay refused as themselves; public IPv4 spelled either way stays allowed', () => {
    expect(publicAddress('::1')).toBe(false);
    expect(publicAddress('::')).toBe(false);
    expect(publicAddress('::808:808')).toBe(true);
    expect(publicAddress('::ffff:8.8.8.8')).toBe(true);
    expect(checkCallbackUrl('https://[2606:4700::1111]/', policy).hostname).toBe('[2606:4700::1111]');
  });

  it('a name resolving to an IPv4-compatible loopback address was accepted at registration and at connect time', async () => {
    const url = new URL('https://rebind.example/cb');
    await expect(checkResolvedHost(url, policy, testResolver({ 'rebind.example': ['::7f00:1'] }))).rejects.toMatchObject({ code: 'callback_url_refused' });
    expect(await lookupRefuses(['::7f00:1'])).toBe(true);
    expect(await lookupRefuses(['::ffff:10.0.0.1'])).toBe(true);
    expect(await lookupRefuses(['2606:4700::1111'])).toBe(false);
  });
});
