import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

describe('loadConfig', () => {
  it('has the embedded defaults and derives the public base, origins and legal domain', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.publicBaseUrl).toBe('http://127.0.0.1:8080');
    expect(config.allowedOrigins).toEqual(['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080']);
    expect(config.legalDomain).toBe('127.0.0.1');
    expect(config.codeValiditySeconds).toBe(300);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reads TABWIRE_* variables with types and lists', () => {
    const config = loadConfig({
      TABWIRE_PORT: '9000',
      TABWIRE_PUBLIC_BASE_URL: 'https://auth.example.org',
      TABWIRE_ALLOWED_ORIGINS: 'https://a.example, https://b.example',
    });
    expect(config.port).toBe(9000);
    expect(config.allowedOrigins).toEqual(['https://auth.example.org', 'https://a.example', 'https://b.example']);
    expect(config.legalDomain).toBe('auth.example.org');
  });

  it('names every bad key, by its variable name too', () => {
    let message = '';
    try {
      loadConfig({ TABWIRE_PORT: 'eighty', TABWIRE_CODE_VALIDITY_SECONDS: '1', TABWIRE_COLOUR: 'x' });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    expect(message).toContain('port (TABWIRE_PORT)');
    expect(message).toContain('codeValiditySeconds (TABWIRE_CODE_VALIDITY_SECONDS)');
    expect(message).toContain('TABWIRE_COLOUR: unknown setting');
  });

  it('takes a Redis Cluster as a comma-separated list of seed URLs, only beside redisUrl', () => {
    const env = { TABWIRE_REDIS_URL: 'redis://10.0.0.1:6379', TABWIRE_REDIS_CLUSTER_URLS: 'redis://10.0.0.2:7000, redis://10.0.0.3:7000' };
    expect(loadConfig(env).redisClusterUrls).toEqual(['redis://10.0.0.2:7000', 'redis://10.0.0.3:7000']);
    expect(() => loadConfig({ TABWIRE_REDIS_CLUSTER_URLS: 'redis://10.0.0.2:7000' })).toThrow(/redisClusterUrls \(TABWIRE_REDIS_CLUSTER_URLS\) needs redisUrl/);
    // A seed is a node, not a database: no path, query or fragment.
    expect(() => loadConfig({ ...env, TABWIRE_REDIS_CLUSTER_URLS: 'redis://10.0.0.2:7000/2' })).toThrow(/redisClusterUrls/);
  });

  it('refuses SameSite=None without https', () => {
    expect(() => loadConfig({ TABWIRE_COOKIE_SAME_SITE: 'none' })).toThrow(/cookieSameSite/);
  });

  it('refuses TABWIRE_HOST=0.0.0.0 or :: without a public base URL, saying what to set', () => {
    for (const host of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0']) {
      expect(() => loadConfig({ TABWIRE_HOST: host })).toThrow(ConfigError);
      expect(() => loadConfig({ TABWIRE_HOST: host })).toThrow(/TABWIRE_PUBLIC_BASE_URL/);
    }
    const config = loadConfig({ TABWIRE_HOST: '0.0.0.0', TABWIRE_PUBLIC_BASE_URL: 'https://auth.example.org' });
    expect(config.publicBaseUrl).toBe('https://auth.example.org');
    expect(config.host).toBe('0.0.0.0');
  });

  it('refuses a public base URL on an unspecified address', () => {
    expect(() => loadConfig({ TABWIRE_PUBLIC_BASE_URL: 'http://0.0.0.0:8080' })).toThrow(/publicBaseUrl \(TABWIRE_PUBLIC_BASE_URL\)/);
    expect(() => loadConfig({ TABWIRE_PUBLIC_BASE_URL: 'http://[::]:8080' })).toThrow(ConfigError);
  });
});

describe('loopback aliases of the public origin', () => {
  it.each([
    ['http://127.0.0.1:9000', 'http'],
    ['http://localhost:9000', 'http'],
    ['http://[::1]:9000', 'http'],
    ['https://localhost:9000', 'https'],
  ])('a deployment at %s allows its loopback aliases on the same scheme and port', (base, scheme) => {
    const config = loadConfig({ TABWIRE_PUBLIC_BASE_URL: base });
    expect([...config.allowedOrigins].sort()).toEqual(
      [`${scheme}://127.0.0.1:9000`, `${scheme}://[::1]:9000`, `${scheme}://localhost:9000`].sort(),
    );
  });

  it('keeps the default port out of the origin', () => {
    expect(loadConfig({ TABWIRE_PUBLIC_BASE_URL: 'http://localhost' }).allowedOrigins).toContain('http://127.0.0.1');
  });

  it('adds no alias to a deployment that is not on 127.0.0.1, localhost or [::1]', () => {
    for (const base of ['https://auth.example.org', 'http://192.0.2.10:8080', 'http://127.0.0.2:8080', 'http://localhost.example.org:8080']) {
      expect(loadConfig({ TABWIRE_PUBLIC_BASE_URL: base }).allowedOrigins).toEqual([new URL(base).origin]);
    }
  });

  it('keeps further allowed origins, and adds no alias for them', () => {
    const config = loadConfig({ TABWIRE_PUBLIC_BASE_URL: 'https://auth.example.org', TABWIRE_ALLOWED_ORIGINS: 'http://localhost:3000' });
    expect(config.allowedOrigins).toEqual(['https://auth.example.org', 'http://localhost:3000']);
  });
});
