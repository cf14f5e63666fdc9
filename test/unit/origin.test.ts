import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { TabwireError } from '../../src/errors.js';
import { checkOriginHeader } from '../../src/http/origin.js';

const refusal = (origin: string, allowed: readonly string[]) => {
  try {
    checkOriginHeader(origin, allowed);
  } catch (err) {
    return (err as TabwireError).code;
  }
  return 'accepted';
};

describe('the Origin rule with loopback aliases', () => {
  it('accepts localhost and [::1] pages on the default 127.0.0.1 deployment (regression: demo at http://localhost:8080 was origin_not_allowed)', () => {
    const { allowedOrigins } = loadConfig({});
    expect(checkOriginHeader('http://localhost:8080', allowedOrigins)).toBe('http://localhost:8080');
    expect(checkOriginHeader('http://[::1]:8080', allowedOrigins)).toBe('http://[::1]:8080');
    expect(checkOriginHeader('http://127.0.0.1:8080', allowedOrigins)).toBe('http://127.0.0.1:8080');
  });

  it('still refuses another port, another scheme or another loopback address', () => {
    const { allowedOrigins } = loadConfig({});
    for (const origin of ['http://localhost:8081', 'https://localhost:8080', 'http://127.0.0.2:8080', 'http://localhost', 'null']) {
      expect(refusal(origin, allowedOrigins)).toBe('origin_not_allowed');
    }
  });

  it('gives a deployment on a public name no loopback origin', () => {
    const { allowedOrigins } = loadConfig({ TABWIRE_PUBLIC_BASE_URL: 'http://auth.example.org:8080', TABWIRE_HOST: '127.0.0.1' });
    for (const origin of ['http://localhost:8080', 'http://127.0.0.1:8080', 'http://[::1]:8080']) {
      expect(refusal(origin, allowedOrigins)).toBe('origin_not_allowed');
    }
    expect(checkOriginHeader('http://auth.example.org:8080', allowedOrigins)).toBe('http://auth.example.org:8080');
  });
});
