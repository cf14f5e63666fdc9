import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

describe('loadConfig', () => {
  it('has the embedded defaults and derives the public base, origins and legal domain', () => {
    const config = loadConfig({});
    expect(config.port).toBe(8080);
    expect(config.publicBaseUrl).toBe('http://127.0.0.1:8080');
    expect(config.allowedOrigins).toEqual(['http://127.0.0.1:8080']);
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

  it('refuses SameSite=None without https', () => {
    expect(() => loadConfig({ TABWIRE_COOKIE_SAME_SITE: 'none' })).toThrow(/cookieSameSite/);
  });
});
