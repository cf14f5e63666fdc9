import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { closestName, editDistance } from '../../src/config/suggest.js';

/** The message loadConfig refuses `env` with (fails the test when it accepts it). */
function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('configuration was accepted');
}

describe('config errors for enumerations list the allowed values (they said "Expected union value")', () => {
  it('names the allowed values and the value given', () => {
    const message = refusal({ TABWIRE_COOKIE_SAME_SITE: 'lox' });
    expect(message).toContain('cookieSameSite (TABWIRE_COOKIE_SAME_SITE): expected one of lax, strict, none (got "lox")');
    expect(message).not.toContain('union');
  });

  it('does so for every enumeration setting at once', () => {
    const message = refusal({ TABWIRE_LOG_LEVEL: 'verbose', TABWIRE_DEV_APPROVAL: 'yes', TABWIRE_LOG_FORMAT: 'text' });
    expect(message).toContain('logLevel (TABWIRE_LOG_LEVEL): expected one of fatal, error, warn, info, debug, trace, silent (got "verbose")');
    expect(message).toContain('devApproval (TABWIRE_DEV_APPROVAL): expected one of auto, on, off (got "yes")');
    expect(message).toContain('logFormat (TABWIRE_LOG_FORMAT): expected one of auto, pretty, json (got "text")');
  });

  it('leaves other messages as they were', () => {
    expect(refusal({ TABWIRE_PORT: 'eighty' })).toContain('port (TABWIRE_PORT): Expected integer');
  });
});

describe('a near-miss variable name suggests the right one', () => {
  it.each([
    ['TABWIRE_PUBLIC_BASEURL', 'TABWIRE_PUBLIC_BASE_URL'],
    ['TABWIRE_DATABSE_URL', 'TABWIRE_DATABASE_URL'],
    ['TABWIRE_PROT', 'TABWIRE_PORT'],
    ['TABWIRE_LOGLEVEL', 'TABWIRE_LOG_LEVEL'],
    ['TABWIRE_REDIS_ULR', 'TABWIRE_REDIS_URL'],
    ['TABWIRE_CONFIG_FLIE', 'TABWIRE_CONFIG_FILE'],
    ['TABWIRE_TRUST_PROXIES', 'TABWIRE_TRUST_PROXY'],
  ])('%s: unknown setting; did you mean %s?', (wrong, right) => {
    expect(refusal({ [wrong]: 'x' })).toContain(`${wrong}: unknown setting; did you mean ${right}?`);
  });

  it('suggests nothing for a name that is close to no setting', () => {
    const message = refusal({ TABWIRE_COLOUR: 'blue' });
    expect(message).toContain('TABWIRE_COLOUR: unknown setting');
    expect(message).not.toContain('did you mean');
  });

  it('suggests a key of the config file too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-config-'));
    try {
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify({ publicBaseURL: 'https://auth.example.org', colour: 'blue' }));
      const message = refusal({ TABWIRE_CONFIG_FILE: file });
      expect(message).toContain('unknown setting; did you mean publicBaseUrl?');
      expect(message.split('\n').find((line) => line.includes('colour'))?.trim()).toBe('colour (TABWIRE_COLOUR): unknown setting');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('editDistance and closestName', () => {
  it('counts insertions, deletions, substitutions and neighbour swaps as one edit each', () => {
    expect(editDistance('PORT', 'PORT')).toBe(0);
    expect(editDistance('PROT', 'PORT')).toBe(1);
    expect(editDistance('DATABSEURL', 'DATABASEURL')).toBe(1);
    expect(editDistance('HOST', 'HOSTS')).toBe(1);
    expect(editDistance('', 'ABC')).toBe(3);
    expect(editDistance('KITTEN', 'SITTING')).toBe(3);
  });

  it('ignores case and underscores, and refuses to guess between two equally close names', () => {
    expect(closestName('TABWIRE_public_base_url', ['TABWIRE_PUBLIC_BASE_URL', 'TABWIRE_PORT'], 'TABWIRE_')).toBe('TABWIRE_PUBLIC_BASE_URL');
    expect(closestName('TABWIRE_HOTS', ['TABWIRE_HOST', 'TABWIRE_HOTZ'], 'TABWIRE_')).toBeUndefined();
    expect(closestName('TABWIRE_XYZ', ['TABWIRE_HOST'], 'TABWIRE_')).toBeUndefined();
  });
});
