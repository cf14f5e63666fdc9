/**
 * Strict Ed25519 encodings (RFC 8032): the checks that make a key or a signature prove something.
 * Node's verification (OpenSSL) accepts a public key of small order, and with the neutral point as key
 * one fixed 64-byte value "verifies" for every message ([S]B = R + [k]A holds with A = R = identity,
 * S = 0). These checks run before it. Pure byte tests: no Node or DOM APIs, so the SDKs can use them.
 */

/** Why an encoded Ed25519 point or signature is refused. */
export type Ed25519EncodingProblem = 'non_canonical' | 'small_order';

/**
 * The canonical encodings of the eight points of small order (the torsion subgroup: the curve's
 * cofactor is 8, RFC 8032 §5.1). A public key or a signature's R among them proves nothing. The list is
 * the one libsodium refuses; test/unit/ed25519-strict.test.ts derives it again from curve arithmetic.
 */
const SMALL_ORDER_ENCODINGS: ReadonlySet<string> = new Set([
  '0100000000000000000000000000000000000000000000000000000000000000', // (0, 1), the neutral point: order 1
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // (0, -1): order 2
  '0000000000000000000000000000000000000000000000000000000000000080', // (x, 0) with x^2 = -1, x odd: order 4
  '0000000000000000000000000000000000000000000000000000000000000000', // (x, 0) with x^2 = -1, x even: order 4
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85', // order 8
]);

/** The order L of the base point (RFC 8032 §5.1), little-endian, for the S < L comparison. */
const GROUP_ORDER_LE = Uint8Array.from([
  0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
]);

const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * RFC 8032 §5.1.3 step 1: the y coordinate (the low 255 bits) must be below p = 2^255 - 19; step 4:
 * x = 0 with the sign bit set is refused. Of the 2^255 - p = 19 values of y at or above p, each is a
 * little-endian number whose top 31 bytes are ff…ff7f and whose first byte is 0xed or more.
 */
function canonicalY(point: Uint8Array): boolean {
  if ((point[31]! & 0x7f) !== 0x7f) return true;
  for (let i = 30; i >= 1; i--) if (point[i] !== 0xff) return true;
  return point[0]! < 0xed;
}

/** x = 0 only for y = 1 and y = -1 (RFC 8032 §5.1.3 step 4): with the sign bit set, not canonical. */
const ZERO_X_WITH_SIGN = new Set([
  '0100000000000000000000000000000000000000000000000000000000000080',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
]);

/**
 * The problem with a 32-byte encoded point (a public key, or a signature's R), or undefined when it is
 * a canonical encoding of a point outside the small-order subgroup. Whether it is on the curve at all is
 * not decided here (that needs a square root); a point off the curve never verifies in Node either.
 */
export function encodedPointProblem(point: Uint8Array): Ed25519EncodingProblem | undefined {
  if (point.length !== 32) return 'non_canonical';
  if (!canonicalY(point)) return 'non_canonical';
  const text = hex(point);
  if (ZERO_X_WITH_SIGN.has(text)) return 'non_canonical';
  return SMALL_ORDER_ENCODINGS.has(text) ? 'small_order' : undefined;
}

/** RFC 8032 §5.1.7 step 1: S must be below L (a non-canonical S would make a second valid signature). */
export function canonicalScalar(s: Uint8Array): boolean {
  if (s.length !== 32) return false;
  for (let i = 31; i >= 0; i--) {
    if (s[i]! !== GROUP_ORDER_LE[i]!) return s[i]! < GROUP_ORDER_LE[i]!;
  }
  return false; // S = L
}

/**
 * Whether a public key and a 64-byte signature pass the strict checks that must precede the
 * verification equation: the key and R canonical and not of small order, S canonical.
 */
export function strictlyEncoded(publicKey: Uint8Array, signature: Uint8Array): boolean {
  return (
    signature.length === 64 &&
    encodedPointProblem(publicKey) === undefined &&
    encodedPointProblem(signature.subarray(0, 32)) === undefined &&
    canonicalScalar(signature.subarray(32))
  );
}
