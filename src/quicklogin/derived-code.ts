import { createHmac, timingSafeEqual } from 'node:crypto';
import { PREFIX_PERIOD_MS, prefixTime, TIME_PREFIX_CHARS, timePrefix } from './codes.js';

/**
 * Derived login codes (docs/signing.md "Derived codes"): the same 22 characters as a stored code (CODE_PATTERN,
 * so every signUrl of a service keeps one length and one QR symbol size), made without any write:
 *
 *   6 chars  issue time, milliseconds modulo 2^36 (the sorted time prefix of codes.ts)
 *   16 chars 96 bits, base64url: 12 bits salt | 36 bits request id | 48 bits MAC
 *
 * The MAC is HMAC-SHA-256 (RFC 2104) under the request's code key over the whole issue time, the salt, the
 * request id and the request's digest (a MAC of every parameter of the request, qr-requests.ts), truncated to
 * 48 bits (RFC 2104 §5). The salt is a per-process counter from a random start, so two codes for one request
 * in one millisecond still differ.
 */

/** Bits of the salt, request id and MAC in the code's 96-bit body. */
export const SALT_BITS = 12;
export const REQUEST_ID_BITS = 36;
const MAC_BYTES = 6;
const BODY_BYTES = 12;
/** Issue times may lie this far in the future of the checking node's clock (nodes' clocks differ). */
export const FUTURE_SKEW_MS = 60_000;
const DOMAIN = Buffer.from('tabwire/derived-code/1\0', 'utf8');

/** What a derived code says; `mac` is still to be checked against its request (`macMatches`). */
export interface DerivedCodeParts {
  issuedAt: number;
  salt: number;
  requestId: number;
  mac: Buffer;
}

/** Where the MAC input's parts sit: domain | issue time (64 bits) | salt and id (48 bits) | request digest. */
const TIME_AT = DOMAIN.length;
const HEAD_AT = TIME_AT + 8;
const DIGEST_AT = HEAD_AT + 6;

/**
 * The MAC over one buffer holding every part, written in place: a refresh derives a code on every request, and
 * one update of one buffer costs less than an update per part and the buffers for each. The bytes MACed are
 * the same either way.
 */
function macOf(secret: Buffer, issuedAt: number, salt: number, requestId: number, requestDigest: Buffer): Buffer {
  const input = Buffer.allocUnsafe(DIGEST_AT + requestDigest.length);
  DOMAIN.copy(input, 0);
  // The issue time as a 64-bit big-endian integer (a millisecond count, below 2^53).
  input.writeUInt32BE(Math.floor(issuedAt / 2 ** 32), TIME_AT);
  input.writeUInt32BE(issuedAt >>> 0, TIME_AT + 4);
  writeSaltAndId(input, HEAD_AT, salt, requestId);
  requestDigest.copy(input, DIGEST_AT);
  return createHmac('sha256', secret).update(input).digest();
}

/** 48 bits at `at`: the salt in the top 12, the request id in the low 36 (writeUIntBE takes up to 6 bytes). */
function writeSaltAndId(out: Buffer, at: number, salt: number, requestId: number): void {
  out.writeUIntBE(salt * 2 ** REQUEST_ID_BITS + requestId, at, 6);
}

/** The code of request `requestId` (digest `requestDigest`, key `secret`) issued at `issuedAt` with `salt`. */
export function deriveCode(secret: Buffer, requestDigest: Buffer, requestId: number, issuedAt: number, salt: number): string {
  const body = Buffer.allocUnsafe(BODY_BYTES);
  writeSaltAndId(body, 0, salt, requestId);
  macOf(secret, issuedAt, salt, requestId, requestDigest).copy(body, 6, 0, MAC_BYTES);
  return timePrefix(issuedAt) + body.toString('base64url');
}

/**
 * The parts of a code shaped like a derived one, its issue time placed in the 2^36 ms period that ends
 * FUTURE_SKEW_MS after `now`; undefined for any other string. Says nothing of whether the code is genuine.
 */
export function parseDerivedCode(code: string, now: number): DerivedCodeParts | undefined {
  const time = prefixTime(code);
  if (time === undefined || code.length !== TIME_PREFIX_CHARS + 16) return undefined;
  const body = Buffer.from(code.slice(TIME_PREFIX_CHARS), 'base64url');
  // Only the canonical spelling: base64url decoders skip stray characters, and an altered code must not decode alike.
  if (body.length !== BODY_BYTES || body.toString('base64url') !== code.slice(TIME_PREFIX_CHARS)) return undefined;
  const latest = now + FUTURE_SKEW_MS;
  const issuedAt = latest - ((((latest - time) % PREFIX_PERIOD_MS) + PREFIX_PERIOD_MS) % PREFIX_PERIOD_MS);
  const head = body.readUIntBE(0, 6);
  return { issuedAt, salt: Math.floor(head / 2 ** REQUEST_ID_BITS), requestId: head % 2 ** REQUEST_ID_BITS, mac: body.subarray(6) };
}

/** Whether `parts.mac` is the MAC of the parts under `secret` for the request with digest `requestDigest` (constant time). */
export function macMatches(secret: Buffer, requestDigest: Buffer, parts: DerivedCodeParts): boolean {
  const expected = macOf(secret, parts.issuedAt, parts.salt, parts.requestId, requestDigest).subarray(0, MAC_BYTES);
  return timingSafeEqual(expected, parts.mac);
}
