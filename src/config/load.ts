import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { isUnspecifiedAddress, loopbackAliases } from './hosts.js';
import { ConfigSchema, type Config, type ConfigInput } from './schema.js';
import { closestName } from './suggest.js';
import { packageRoot } from '../package-root.js';

/** Thrown when configuration is invalid; the message names every bad key. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

const ENV_PREFIX = 'TABWIRE_';
const FILE_VARIABLE = 'TABWIRE_CONFIG_FILE';

const toEnvName = (key: string): string => ENV_PREFIX + key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/** Turns an environment string into the JSON type the schema expects for that key. */
function fromEnv(key: string, raw: string): unknown {
  const property = (ConfigSchema.properties as Record<string, { type?: string }>)[key];
  switch (property?.type) {
    case 'integer':
    case 'number':
      return raw.trim() === '' || Number.isNaN(Number(raw)) ? raw : Number(raw);
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : raw;
    case 'array':
      return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
    default:
      return raw;
  }
}

function readFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${FILE_VARIABLE}: cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`${FILE_VARIABLE}: ${path} is not a JSON object: ${(err as Error).message}`);
  }
}

/**
 * Reads configuration from the optional JSON file and TABWIRE_* variables, validates it once
 * and returns a frozen object. Unknown TABWIRE_* variables are errors, so typos do not pass silently;
 * one close to a known name says which it probably meant (suggest.ts).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ConfigInput> = {}): Config {
  const keys = Object.keys(ConfigSchema.properties);
  const envNames = new Map(keys.map((k) => [toEnvName(k), k]));
  const input: Record<string, unknown> = {};
  const fileName = env[FILE_VARIABLE];
  if (fileName) Object.assign(input, readFile(fileName));

  const problems: string[] = [];
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith(ENV_PREFIX) || name === FILE_VARIABLE || raw === undefined) continue;
    const key = envNames.get(name);
    if (!key) problems.push(`${name}: unknown setting${didYouMean(closestName(name, [...envNames.keys(), FILE_VARIABLE], ENV_PREFIX))}`);
    else input[key] = fromEnv(key, raw);
  }
  Object.assign(input, overrides);

  const withDefaults = Value.Default(ConfigSchema, structuredClone(input));
  for (const error of Value.Errors(ConfigSchema, withDefaults)) {
    const key = error.path.replace(/^\//, '').split('/')[0] ?? '';
    const where = key === '' ? 'config' : `${key} (${toEnvName(key)})`;
    problems.push(`${where}: ${describeError(error, keys)}${error.path.includes('/', 1) ? ` at ${error.path}` : ''}`);
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  return finish(withDefaults as ConfigInput);
}

const didYouMean = (name: string | undefined): string => (name === undefined ? '' : `; did you mean ${name}?`);

/**
 * TypeBox's message, made useful where it is not: an enumeration lists its allowed values instead of
 * "Expected union value", and an unknown key of the config file suggests a known one close to it.
 */
function describeError(error: { message: string; path: string; schema: unknown; value: unknown }, keys: readonly string[]): string {
  const allowed = enumValues(error.schema);
  if (allowed) return `expected one of ${allowed.join(', ')} (got ${JSON.stringify(error.value)})`;
  const key = error.path.slice(1);
  if (error.message === 'Unexpected property' && !key.includes('/')) return `unknown setting${didYouMean(closestName(key, keys))}`;
  return error.message;
}

/** The values of a union of string literals (an enumeration setting such as cookieSameSite), else undefined. */
function enumValues(schema: unknown): string[] | undefined {
  const anyOf = (schema as { anyOf?: unknown } | null)?.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length === 0) return undefined;
  const values = anyOf.map((member: { const?: unknown }) => member?.const);
  return values.every((v): v is string => typeof v === 'string') ? values : undefined;
}

function finish(input: ConfigInput): Config {
  if (input.publicBaseUrl === undefined && isUnspecifiedAddress(input.host)) {
    // Listening on every interface says nothing about the name browsers use; signUrls need that name.
    throw new ConfigError(
      `invalid configuration:\n  host (TABWIRE_HOST) "${input.host}" listens on every interface, which is no address a browser or phone can use: ` +
        'set publicBaseUrl (TABWIRE_PUBLIC_BASE_URL) to the URL people reach the service at, e.g. https://auth.example.org or http://192.0.2.10:8080',
    );
  }
  const scheme = input.tlsCertFile === undefined ? 'http' : 'https';
  const publicBaseUrl = (input.publicBaseUrl ?? `${scheme}://${hostForUrl(input.host)}:${input.port}`).replace(/\/$/, '');
  const base = new URL(publicBaseUrl);
  if (isUnspecifiedAddress(base.hostname)) {
    throw new ConfigError(
      `invalid configuration:\n  publicBaseUrl (TABWIRE_PUBLIC_BASE_URL): ${base.hostname} is no address a browser or phone can use: set the URL people reach the service at`,
    );
  }
  if (input.cookieSameSite === 'none' && base.protocol !== 'https:') {
    throw new ConfigError('invalid configuration:\n  cookieSameSite (TABWIRE_COOKIE_SAME_SITE): "none" needs an https publicBaseUrl');
  }
  if ((input.tlsCertFile === undefined) !== (input.tlsKeyFile === undefined)) {
    throw new ConfigError('invalid configuration:\n  tlsCertFile (TABWIRE_TLS_CERT_FILE) and tlsKeyFile (TABWIRE_TLS_KEY_FILE) must be set together');
  }
  if (input.redisClusterUrls !== undefined && input.redisUrl === undefined) {
    throw new ConfigError('invalid configuration:\n  redisClusterUrls (TABWIRE_REDIS_CLUSTER_URLS) needs redisUrl (TABWIRE_REDIS_URL), which keeps what is not per tab');
  }
  if (input.xmppService !== undefined && input.xmppComponentSecret === undefined) {
    throw new ConfigError('invalid configuration:\n  xmppComponentSecret (TABWIRE_XMPP_COMPONENT_SECRET) is needed with xmppService');
  }
  const legalDomain = input.legalDomain ?? base.hostname;
  return Object.freeze({
    ...input,
    // Relative to the installation folder, not the current one: the service and the operator commands
    // (`tabwire identity list` run from anywhere) then open the same file (docs/configuration.md).
    sqliteFile: input.sqliteFile === ':memory:' ? input.sqliteFile : resolve(packageRoot(), input.sqliteFile),
    publicBaseUrl,
    // The service's own pages (demo, approval page) always may use it; other origins only when listed.
    // On a loopback deployment its loopback aliases too (localhost for 127.0.0.1 and so on; never for other hosts).
    allowedOrigins: Object.freeze([...new Set([base.origin, ...loopbackAliases(base), ...(input.allowedOrigins ?? [])])]),
    legalDomain,
    xmppComponentDomain: input.xmppComponentDomain ?? `agents.${legalDomain}`,
    devApprovalEnabled: input.devApproval === 'on' || (input.devApproval === 'auto' && isLoopback(base.hostname)),
  });
}

const hostForUrl = (host: string): string => (host.includes(':') ? `[${host}]` : host);

const isLoopback = (hostname: string): boolean =>
  hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
