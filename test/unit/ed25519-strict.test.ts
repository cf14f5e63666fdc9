import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { publicKeyProblem, rawPublicKey, verifyEd25519 } from '../../src/identity/keys.js';
import { canonicalScalar, encodedPointProblem, strictlyEncoded } from '../../src/protocol/ed25519-strict.js';

// Keys and signatures that prove nothing are refused (docs/signing.md "Keys that are refused").

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

const le = (n: bigint): Uint8Array => {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = Number((n >> BigInt(8 * i)) & 255n);
  return out;
};
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The eight points of small order, derived from curve arithmetic: [L]Q for a point Q with a torsion part of order 8, and its multiples. */
function smallOrderEncodings(): string[] {
  for (let y = 2n; ; y++) {
    let q;
    try {
      q = ed25519.Point.fromBytes(le(y), false);
    } catch {
      continue; // not on the curve
    }
    const t = q.multiplyUnsafe(L - 1n).add(q); // [L]Q: the torsion component
    if (t.double().double().is0()) continue; // order below 8: it does not generate all eight
    const out: string[] = [];
    let m = ed25519.Point.ZERO;
    for (let i = 0; i < 8; i++, m = m.add(t)) out.push(hex(m.toBytes()));
    return out;
  }
}

/** A y at or above p whose reduction y - p is the y of a curve point: a non-canonical encoding of a valid point. */
function nonCanonicalValidPoint(): Uint8Array {
  for (let k = 2n; k < 19n; k++) {
    try {
      const point = ed25519.Point.fromBytes(le(k), false);
      if (!point.isSmallOrder()) return le(P + k);
    } catch {
      // k is not the y of a point; try the next
    }
  }
  throw new Error('no y below 19 is on the curve');
}

const realPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { raw: rawPublicKey(publicKey), publicKey, privateKey };
};

describe('encodedPointProblem', () => {
  it('names exactly the eight small-order points, as curve arithmetic derives them', () => {
    const derived = smallOrderEncodings();
    expect(new Set(derived).size).toBe(8);
    for (const encoding of derived) {
      expect(ed25519.Point.fromBytes(Buffer.from(encoding, 'hex'), false).isSmallOrder()).toBe(true);
      expect(encodedPointProblem(Buffer.from(encoding, 'hex'))).toBe('small_order');
    }
    // A real key, and a thousand more, are none of them.
    for (let i = 0; i < 1000; i++) expect(encodedPointProblem(Buffer.from(realPair().raw, 'base64'))).toBeUndefined();
  });

  it('refuses non-canonical encodings: y >= p (of a valid point and of the neutral point), x = 0 with the sign bit', () => {
    const valid = nonCanonicalValidPoint();
    expect(() => ed25519.Point.fromBytes(valid, true)).not.toThrow(); // ZIP-215 would accept it
    expect(encodedPointProblem(valid)).toBe('non_canonical');
    expect(encodedPointProblem(le(P + 1n))).toBe('non_canonical');
    expect(encodedPointProblem(le(P))).toBe('non_canonical');
    expect(encodedPointProblem(le(2n ** 255n - 1n))).toBe('non_canonical');
    const neutralSigned = le(1n);
    neutralSigned[31] = 0x80;
    expect(encodedPointProblem(neutralSigned)).toBe('non_canonical');
    expect(encodedPointProblem(le(P - 20n))).not.toBe('non_canonical'); // just below the bound: canonical
    expect(encodedPointProblem(new Uint8Array(31))).toBe('non_canonical');
  });
});

describe('canonicalScalar (S < L)', () => {
  it('accepts 0 and L - 1, refuses L, L + 1 and 2^256 - 1', () => {
    expect(canonicalScalar(le(0n))).toBe(true);
    expect(canonicalScalar(le(L - 1n))).toBe(true);
    expect(canonicalScalar(le(L))).toBe(false);
    expect(canonicalScalar(le(L + 1n))).toBe(false);
    expect(canonicalScalar(new Uint8Array(32).fill(0xff))).toBe(false);
  });
});

describe('verifyEd25519', () => {
  const message = Buffer.from('tabwire-quicklogin-v1\nany message');
  const neutral = Buffer.from(le(1n)).toString('base64');
  const forged = Buffer.concat([Buffer.from(le(1n)), Buffer.alloc(32)]); // R = neutral point, S = 0

  it('a real key and signature verify', () => {
    const { raw, privateKey } = realPair();
    expect(verifyEd25519(raw, message, sign(null, message, privateKey).toString('base64'))).toBe(true);
  });

  it('the neutral point as key with R = neutral, S = 0: OpenSSL 3.0 alone accepts it for any message, the strict check refuses', () => {
    const key = ed25519.Point.fromBytes(le(1n), false);
    expect(key.is0()).toBe(true);
    // What Node checks without the strict encoding checks in front of it. The OpenSSL of Node.js 20 (3.0)
    // accepts this value for any message; OpenSSL 3.5 (in current Node.js 22, 24 and 26) refuses it. The
    // strict check must refuse it whichever OpenSSL runs underneath.
    const nodeKey = { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(le(1n)).toString('base64url') };
    const nodeAccepts = verify(null, message, { key: nodeKey, format: 'jwk' }, forged);
    if (process.versions.openssl.startsWith('3.0.')) expect(nodeAccepts).toBe(true);
    expect(verifyEd25519(neutral, message, forged.toString('base64'))).toBe(false);
  });

  it('every small-order key is refused with any signature', () => {
    for (const encoding of smallOrderEncodings()) {
      const key = Buffer.from(encoding, 'hex').toString('base64');
      expect(verifyEd25519(key, message, forged.toString('base64'))).toBe(false);
      expect(strictlyEncoded(Buffer.from(encoding, 'hex'), forged)).toBe(false);
    }
  });

  it('a real key with a small-order R or a non-canonical S (S + L) is refused', () => {
    const { raw, privateKey } = realPair();
    const good = sign(null, message, privateKey);
    const s = BigInt(`0x${hex(Uint8Array.from(good.subarray(32)).reverse())}`);
    const malleable = Buffer.concat([good.subarray(0, 32), Buffer.from(le(s + L))]);
    expect(verifyEd25519(raw, message, malleable.toString('base64'))).toBe(false);
    for (const encoding of smallOrderEncodings()) {
      const withSmallR = Buffer.concat([Buffer.from(encoding, 'hex'), good.subarray(32)]);
      expect(strictlyEncoded(Buffer.from(raw, 'base64'), withSmallR)).toBe(false);
    }
  });
});

describe('publicKeyProblem (keys offered to the service)', () => {
  it('a real key has none; small order, non-canonical, off the curve and wrong length are named', () => {
    expect(publicKeyProblem(realPair().raw)).toBeUndefined();
    for (const encoding of smallOrderEncodings()) expect(publicKeyProblem(Buffer.from(encoding, 'hex').toString('base64'))).toBe('small_order');
    expect(publicKeyProblem(Buffer.from(nonCanonicalValidPoint()).toString('base64'))).toBe('non_canonical');
    let offCurve = 2n;
    for (; ; offCurve++) {
      try {
        ed25519.Point.fromBytes(le(offCurve), false);
      } catch {
        break;
      }
    }
    expect(publicKeyProblem(Buffer.from(le(offCurve)).toString('base64'))).toBe('not_on_curve');
    expect(publicKeyProblem(Buffer.alloc(31).toString('base64'))).toBe('length');
  });
});
