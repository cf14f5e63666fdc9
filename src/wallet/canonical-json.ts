/**
 * RFC 8785 (JCS) canonical JSON for the values an identity application holds: objects, arrays,
 * strings, finite numbers, booleans and null. Keys are sorted by UTF-16 code units (RFC 8785 §3.2.3),
 * which is what Array.prototype.sort does with strings; strings and numbers are serialised as
 * ECMAScript's JSON.stringify does, which RFC 8785 §3.2.2 adopts. Imports nothing (unit-tested
 * against the `canonicalize` package the service uses).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('JCS has no representation for a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`JCS has no representation for a ${typeof value}`);
}
