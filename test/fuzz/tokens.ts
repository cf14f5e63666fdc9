import { createHmac, createPublicKey, sign, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { headerSafe, oddString } from './strings.js';

/**
 * Authorization headers a client should never get past the bearer guard with (RFC 6750, RFC 7519,
 * and the known JWT attacks of RFC 8725 §2.1: `alg: none`, algorithm confusion with HS256 keyed by
 * the public key, forged or injected keys via `kid`/`jwk`/`jku`), next to the valid one.
 */

const b64url = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

function parts(jwt: string): { header: Record<string, unknown>; payload: Record<string, unknown>; signature: string } {
  const [h, p, s] = jwt.split('.');
  return { header: JSON.parse(Buffer.from(h!, 'base64url').toString()), payload: JSON.parse(Buffer.from(p!, 'base64url').toString()), signature: s ?? '' };
}

/** A compact JWS over `header` and `payload`, signed by `signer` over the signing input. */
const compact = (header: unknown, payload: unknown, signer: (input: string) => string): string => {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${signer(input)}`;
};

const edSign = (key: KeyObject) => (input: string) => sign(null, Buffer.from(input), key).toString('base64url');

/**
 * Forged tokens built from a valid one (its kid and claims), a key the service does not know, and
 * the service's public key (RFC 8725 §2.1: HS256 "signed" with the public key as the HMAC secret).
 */
export function forgedTokens(validJwt: string | undefined, attackerKey: KeyObject, serviceJwk?: Record<string, unknown>): string[] {
  const now = Math.floor(Date.now() / 1000);
  const { header, payload, signature } = validJwt
    ? parts(validJwt)
    : { header: { alg: 'EdDSA', kid: 'unknown', typ: 'JWT' }, payload: { sub: 'x', userName: 'x', exp: now + 60, nbf: now, iat: now }, signature: 'AA' };
  const attacker = edSign(attackerKey);
  const attackerJwk = createPublicKey(attackerKey).export({ format: 'jwk' });
  const [h, p] = validJwt?.split('.') ?? [b64url(header), b64url(payload)];
  const other = { ...payload, sub: 'another-account', userName: 'admin' };
  // The public key as an HMAC secret, in the encodings a confused verifier might use: the JWK text, its raw x, the PEM.
  const publicSecrets = serviceJwk
    ? [JSON.stringify(serviceJwk), String(serviceJwk.x ?? ''), createPublicKey({ key: serviceJwk as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()]
    : [];
  const hmac = (secret: string) => (input: string) => createHmac('sha256', secret).update(input).digest('base64url');
  return [
    compact({ alg: 'none', typ: 'JWT' }, payload, () => ''),
    compact({ alg: 'None', kid: header.kid }, payload, () => ''),
    ...publicSecrets.map((secret) => compact({ ...header, alg: 'HS256' }, payload, hmac(secret))),
    compact({ ...header, alg: 'HS256' }, payload, hmac(JSON.stringify(attackerJwk))),
    compact({ ...header, alg: 'HS256' }, payload, hmac(String(header.kid ?? ''))),
    compact({ ...header, alg: 'RS256' }, payload, attacker),
    compact(header, payload, attacker),
    compact(header, other, attacker),
    compact({ ...header, kid: 'no-such-key' }, payload, attacker),
    compact({ ...header, kid: '../../../../dev/null' }, payload, attacker),
    compact({ ...header, kid: "' OR 1=1 --" }, payload, attacker),
    compact({ ...header, kid: 'k'.repeat(5_000) }, payload, attacker),
    compact({ ...header, kid: '\u0000\ud800' }, payload, attacker),
    compact({ ...header, kid: 42 }, payload, attacker),
    compact({ alg: 'EdDSA', typ: 'JWT' }, payload, attacker),
    compact({ ...header, jwk: attackerJwk }, payload, attacker),
    compact({ ...header, jku: 'https://127.0.0.1:1/jwks.json' }, payload, attacker),
    compact({ ...header, crit: ['exp'] }, payload, attacker),
    compact(header, { ...payload, exp: now - 10 }, attacker),
    compact(header, { ...payload, aud: 'someone-else' }, attacker),
    compact(header, { ...payload, sub: { $ne: null } }, attacker),
    `${h}.${b64url(other)}.${signature}`,
    `${h}.${p}.`,
    `${h}.${p}.${signature}x`,
    `${h}.${p}.${signature.slice(0, -4)}`,
    `${h}.${p}`,
    `${h}.${p}.${signature}.extra`,
    `${b64url('not json')}.${p}.${signature}`,
    `${b64url('{"alg":"EdDSA","kid":')}.${p}.${signature}`,
    `${b64url('[]')}.${p}.${signature}`,
    `${h}.${b64url('null')}.${signature}`,
    `${h}.${b64url('[1]')}.${signature}`,
    `${h}.${b64url('"\ud800"')}.${signature}`,
    'a.b.c',
    '..',
    'e30.e30.',
  ];
}

/** An Authorization header (name and value), or none, for a route that wants a bearer token. */
export function authorizationHeader(validJwt: string | undefined, attackerKey: KeyObject, serviceJwk?: Record<string, unknown>): fc.Arbitrary<Array<[string, string]>> {
  const forged = forgedTokens(validJwt, attackerKey, serviceJwk);
  const valid = validJwt === undefined ? [] : [`Bearer ${validJwt}`];
  const header = (value: string): Array<[string, string]> => [['Authorization', headerSafe(value)]];
  return fc.oneof(
    { weight: valid.length > 0 ? 8 : 0, arbitrary: fc.constantFrom(...(valid.length > 0 ? valid : ['Bearer x'])).map(header) },
    { weight: 1, arbitrary: fc.constant([] as Array<[string, string]>) },
    { weight: 3, arbitrary: fc.constantFrom(...forged).map((t) => header(`Bearer ${t}`)) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.constantFrom('Bearer', 'Bearer ', 'bearer x.y.z', 'Basic Zm9vOmJhcg==', 'Digest x', 'Bearer  a.b.c', `Bearer ${'a'.repeat(20_000)}.b.c`),
          ...(validJwt ? [fc.constantFrom(`bearer ${validJwt}`, `Bearer ${validJwt} `, `Bearer ${validJwt}, Bearer x.y.z`, `Bearer\t${validJwt}`)] : []),
          oddString.map((s) => `Bearer ${s}`),
          oddString,
        )
        .map(header),
    },
    // Two Authorization headers: node joins them; the guard must not pick the good one.
    { weight: valid.length > 0 ? 1 : 0, arbitrary: fc.constant([['Authorization', valid[0] ?? ''], ['Authorization', 'Bearer x.y.z']] as Array<[string, string]>) },
  );
}
