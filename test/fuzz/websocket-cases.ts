import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { FuzzContext } from './context.js';
import { ROUTE_PATHS } from './http-routes.js';
import { badJsonText, badUtf8, headerSafe, hugeString, oddJsonValue, oddString } from './strings.js';
import type { WireRequest } from './wire.js';

/**
 * Generated input for the event channel's WebSocket (RFC 6455): handshakes with missing or wrong
 * parts, sessions on an accepted socket sending frames the protocol does not define, and raw bytes
 * that are not valid WebSocket framing at all.
 */
export type WsFrame =
  | { type: 'text'; data: string }
  | { type: 'binary'; data: Buffer }
  /** One text message in several frames (RFC 6455 §5.4). */
  | { type: 'fragmented'; parts: string[] }
  /** The same text frame many times, back to back. */
  | { type: 'burst'; data: string; count: number };

export type WsCase =
  | { kind: 'ws-handshake'; route: string; request: WireRequest }
  | { kind: 'ws-frames'; route: string; headers: Record<string, string>; frames: WsFrame[] }
  | { kind: 'ws-raw'; route: string; headers: Array<[string, string]>; bytes: Buffer };

type Header = [string, string];

const validKey = () => randomBytes(16).toString('base64');

/** A handshake request: each part valid most of the time, so each refusal is reached on its own. */
function handshake(ctx: FuzzContext): fc.Arbitrary<WireRequest> {
  const pick = <T>(valid: T, odd: fc.Arbitrary<T>, weight = 6) => fc.oneof({ weight, arbitrary: fc.constant(valid) }, { weight: 1, arbitrary: odd });
  const one = (name: string, values: readonly string[]): fc.Arbitrary<Header[]> =>
    fc.oneof(fc.constant<Header[]>([]), fc.constantFrom(...values).map((v): Header[] => [[name, v]]), oddString.map((v): Header[] => [[name, headerSafe(v)]]));
  return fc
    .record({
      method: pick('GET', fc.constantFrom('POST', 'PUT', 'HEAD', 'OPTIONS', 'get', 'FUZZ')),
      target: pick('/ClientEventsWS', fc.oneof(fc.constantFrom(...ROUTE_PATHS, '/ClientEventsWS/', '/clienteventsws', '/ClientEventsWS?x=1', '/ClientEventsWS%00', '*', `/ClientEventsWS?${'q'.repeat(9_000)}`), oddString.map((s) => `/${s.replace(/[\s]/g, '')}`))),
      upgrade: pick<Header[]>([['Upgrade', 'websocket']], one('Upgrade', ['WebSocket', 'h2c', 'websocket, h2c', 'websocket2', ''])),
      connection: pick<Header[]>([['Connection', 'Upgrade']], one('Connection', ['keep-alive, Upgrade', 'close', 'upgrade', 'keep-alive', ''])),
      key: pick<Header[]>([['Sec-WebSocket-Key', validKey()]], one('Sec-WebSocket-Key', ['', 'short', 'AAAAAAAAAAAAAAAAAAAAAAAA', 'not base64 at all!!!!!!=', `${validKey()}, ${validKey()}`])),
      version: pick<Header[]>([['Sec-WebSocket-Version', '13']], one('Sec-WebSocket-Version', ['8', '14', '0', '13, 8', '-13', '130', ''])),
      protocol: pick<Header[]>([['Sec-WebSocket-Protocol', 'ls']], one('Sec-WebSocket-Protocol', ['ls, chat', 'chat', 'LS', '', ' ls ', 'ls,ls', ','])),
      extensions: fc.oneof(
        { weight: 4, arbitrary: fc.constant<Header[]>([]) },
        { weight: 1, arbitrary: one('Sec-WebSocket-Extensions', ['permessage-deflate', 'permessage-deflate; client_max_window_bits=99', 'x-unknown', 'permessage-deflate;;;']) },
      ),
      origin: fc.oneof(
        { weight: 4, arbitrary: fc.constant<Header[]>([]) },
        { weight: 2, arbitrary: fc.constantFrom(...ctx.allowedOrigins).map((o): Header[] => [['Origin', o]]) },
        { weight: 1, arbitrary: one('Origin', ['null', 'http://evil.example']) },
      ),
      cookie: fc.oneof(
        fc.constant<Header[]>([]),
        fc.constant<Header[]>([['Cookie', ctx.cookie]]),
        one('Cookie', ['tabwire_sid=%zz', `tabwire_sid=${'A'.repeat(43)}`, 'tabwire_sid=', `a=${'b'.repeat(10_000)}`]),
      ),
    })
    .map((r) => ({
      method: r.method,
      target: r.target,
      headers: [...r.upgrade, ...r.connection, ...r.key, ...r.version, ...r.protocol, ...r.extensions, ...r.origin, ...r.cookie],
    }));
}

const tabIdArb = fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/);

/** Text frames: the three commands, the same with damaged fields, other shapes, and text that is not JSON. */
function textFrame(ctx: FuzzContext): fc.Arbitrary<string> {
  const register = fc.record(
    {
      cmd: fc.constant('Register'),
      tabId: fc.oneof({ weight: 4, arbitrary: tabIdArb }, { weight: 1, arbitrary: fc.constant(ctx.tabId) }, { weight: 2, arbitrary: oddJsonValue }),
      location: fc.oneof({ weight: 4, arbitrary: fc.constant('http://127.0.0.1/page') }, { weight: 2, arbitrary: oddJsonValue }, { weight: 1, arbitrary: fc.constant('l'.repeat(4_097)) }),
      lastEventId: fc.oneof(fc.constantFrom(0, 1, -1, 1.5, 2 ** 53, 1e308, '1'), oddJsonValue),
      extra: oddJsonValue,
    },
    { requiredKeys: ['cmd'] },
  );
  return fc.oneof(
    { weight: 4, arbitrary: register.map((f) => JSON.stringify(f)) },
    { weight: 2, arbitrary: fc.constantFrom('{"cmd":"Ping"}', '{"cmd":"Unregister"}', '{"cmd":"Ping","x":1}', '{"cmd":"ping"}', '{"cmd":"Unregister","tabId":"x"}') },
    { weight: 2, arbitrary: fc.record({ cmd: oddJsonValue, tabId: tabIdArb }).map((f) => JSON.stringify(f)) },
    { weight: 2, arbitrary: badJsonText },
    { weight: 1, arbitrary: oddJsonValue.map((v) => JSON.stringify(v) ?? 'undefined') },
    { weight: 1, arbitrary: fc.constant('') },
  );
}

/** Valid commands in odd orders: Register twice or of another session's tab, Unregister then Register, resume points. */
function validCommand(ctx: FuzzContext): fc.Arbitrary<string> {
  return fc.oneof(
    tabIdArb.map((tabId) => JSON.stringify({ cmd: 'Register', tabId, location: 'http://127.0.0.1/page' })),
    fc.nat().map((lastEventId) => JSON.stringify({ cmd: 'Register', tabId: ctx.tabId, location: 'http://127.0.0.1/page', lastEventId })),
    fc.constantFrom('{"cmd":"Ping"}', '{"cmd":"Unregister"}'),
  );
}

function frame(ctx: FuzzContext): fc.Arbitrary<WsFrame> {
  return fc.oneof(
    { weight: 10, arbitrary: validCommand(ctx).map((data): WsFrame => ({ type: 'text', data })) },
    { weight: 10, arbitrary: textFrame(ctx).map((data): WsFrame => ({ type: 'text', data })) },
    { weight: 1, arbitrary: fc.oneof(badUtf8, fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a))).map((data): WsFrame => ({ type: 'binary', data })) },
    { weight: 1, arbitrary: hugeString.map((data): WsFrame => ({ type: 'text', data })) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom('{"cmd"', ':"Ping"', '}', '\u0000', '"'), { minLength: 2, maxLength: 6 }).map((parts): WsFrame => ({ type: 'fragmented', parts })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom('{"cmd":"Ping"}', '{"cmd":"Unregister"}', 'x'), fc.integer({ min: 50, max: 500 })).map(([data, count]): WsFrame => ({ type: 'burst', data, count })) },
  );
}

/** A session: most start with a valid Register (as a page does), so what follows meets a registered tab. */
function session(ctx: FuzzContext): fc.Arbitrary<WsFrame[]> {
  const register = fc.oneof(
    { weight: 3, arbitrary: tabIdArb.map((tabId): WsFrame[] => [{ type: 'text', data: JSON.stringify({ cmd: 'Register', tabId, location: 'http://127.0.0.1/page' }) }]) },
    { weight: 1, arbitrary: fc.constant<WsFrame[]>([]) },
  );
  return fc.tuple(register, fc.array(frame(ctx), { minLength: 1, maxLength: 6 })).map(([first, rest]) => [...first, ...rest]);
}

/** A WebSocket frame from a client (masked, RFC 6455 §5.3) with the given first byte and payload. */
function clientFrame(first: number, payload: Buffer, lengthOverride?: Buffer): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  const length =
    lengthOverride ?? (payload.length < 126 ? Buffer.from([0x80 | payload.length]) : Buffer.concat([Buffer.from([0x80 | 126]), Buffer.from([payload.length >> 8, payload.length & 0xff])]));
  return Buffer.concat([Buffer.from([first]), length, mask, masked]);
}

/** Bytes after an accepted handshake that break the framing: reserved bits and opcodes, unmasked or oversized frames, bad close codes, invalid UTF-8. */
const rawFrames: fc.Arbitrary<Buffer> = fc.oneof(
  fc.constantFrom(
    Buffer.from([0x81, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f]),
    clientFrame(0xc1, Buffer.from('{"cmd":"Ping"}')),
    clientFrame(0x83, Buffer.from('x')),
    clientFrame(0x8b, Buffer.from('x')),
    clientFrame(0x80, Buffer.from('orphan continuation')),
    clientFrame(0x09, Buffer.from('fragmented ping')),
    clientFrame(0x89, Buffer.alloc(200)),
    clientFrame(0x88, Buffer.from([0x03, 0xec])),
    clientFrame(0x88, Buffer.from([0x00])),
    clientFrame(0x88, Buffer.from([0x0b, 0xb8, 0xff, 0xfe])),
    clientFrame(0x81, Buffer.from([0xed, 0xa0, 0x80])),
    clientFrame(0x81, Buffer.alloc(0), Buffer.from([0x80 | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),
    clientFrame(0x81, Buffer.alloc(0), Buffer.from([0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0])),
    clientFrame(0x81, Buffer.alloc(0), Buffer.from([0x80 | 126, 0xff])),
    clientFrame(0x01, Buffer.from('{"cmd":')),
    Buffer.from('GET / HTTP/1.1\r\n\r\n'),
  ),
  fc.uint8Array({ minLength: 1, maxLength: 256 }).map((a) => Buffer.from(a)),
);

/** The three kinds of WebSocket case, apart (the suite runs one property each). */
export function wsCases(ctx: FuzzContext): Record<'handshake' | 'frames' | 'raw', fc.Arbitrary<WsCase>> {
  const cookie = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Record<string, string>>({ cookie: ctx.cookie }) },
    { weight: 2, arbitrary: fc.constant<Record<string, string>>({}) },
    { weight: 1, arbitrary: fc.constant<Record<string, string>>({ origin: ctx.allowedOrigins[0]! }) },
  );
  return {
    handshake: handshake(ctx).map((request): WsCase => ({ kind: 'ws-handshake', route: 'WS handshake', request })),
    frames: fc
      .tuple(cookie, session(ctx))
      .map(([headers, frames]): WsCase => ({ kind: 'ws-frames', route: 'WS frames', headers, frames })),
    raw: fc
      .tuple(rawFrames, fc.array(rawFrames, { maxLength: 2 }))
      .map(([first, rest]): WsCase => ({ kind: 'ws-raw', route: 'WS raw bytes', headers: [['Cookie', ctx.cookie]], bytes: Buffer.concat([first, ...rest]) })),
  };
}

/** Any WebSocket case: handshakes and sessions with frames most, raw framing damage now and then. */
export function wsCase(ctx: FuzzContext): fc.Arbitrary<WsCase> {
  const cases = wsCases(ctx);
  return fc.oneof({ weight: 4, arbitrary: cases.handshake }, { weight: 5, arbitrary: cases.frames }, { weight: 1, arbitrary: cases.raw });
}

/** The handshake a raw-bytes case starts with: a valid one. */
export function validHandshake(headers: Array<[string, string]>): WireRequest {
  return {
    method: 'GET',
    target: '/ClientEventsWS',
    headers: [['Upgrade', 'websocket'], ['Connection', 'Upgrade'], ['Sec-WebSocket-Key', validKey()], ['Sec-WebSocket-Version', '13'], ['Sec-WebSocket-Protocol', 'ls'], ...headers],
  };
}
