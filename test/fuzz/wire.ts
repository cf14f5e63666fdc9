import { connect, type Socket } from 'node:net';

/**
 * A raw HTTP/1.1 exchange over one TCP connection. The fuzzer writes its own bytes instead of using
 * fetch or node:http because both refuse to send what an attacker sends (NUL in a header, a path
 * with spaces, a Content-Length that lies, an Upgrade without a key); the server must answer those too.
 */
export interface WireRequest {
  method: string;
  /** The request target exactly as written on the request line (RFC 9112 §3.2), not re-encoded. */
  target: string;
  /** In order, duplicates allowed. Host and Content-Length are added unless present (case-insensitive). */
  headers: Array<[string, string]>;
  body?: string | Buffer;
  /** Leave Host out (the default adds one). */
  noHost?: boolean;
  /** Leave Content-Length out even with a body. */
  noContentLength?: boolean;
  /** The protocol on the request line; default HTTP/1.1. */
  version?: string;
}

export interface WireAnswer {
  status: number;
  /** Lower-case names; repeated headers joined with ", " (set-cookie with "\n"). */
  headers: Record<string, string>;
  body: Buffer;
}

/** What came back: an answer, or why none did. `reset` means the server closed or reset without a status line. */
export type WireOutcome =
  | { kind: 'answer'; answer: WireAnswer; socket?: Socket }
  | { kind: 'no_answer'; reason: 'reset' | 'closed' | 'timeout' | 'unparsable'; detail: string };

export interface Target {
  host: string;
  port: number;
}

/** Serialises a request head and body exactly as given (UTF-8 for the head, as a browser would for non-ASCII). */
export function encodeRequest(target: Target, request: WireRequest): Buffer {
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8');
  const has = (name: string) => request.headers.some(([n]) => n.toLowerCase() === name);
  const lines = [`${request.method} ${request.target} ${request.version ?? 'HTTP/1.1'}`.trimEnd()];
  if (!request.noHost && !has('host')) lines.push(`Host: ${target.host}:${target.port}`);
  for (const [name, value] of request.headers) lines.push(`${name}: ${value}`);
  if (body !== undefined && !request.noContentLength && !has('content-length') && !has('transfer-encoding')) {
    lines.push(`Content-Length: ${body.length}`);
  }
  if (!has('connection')) lines.push('Connection: close');
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'utf8');
  return body === undefined ? head : Buffer.concat([head, body]);
}

/** Incremental parser of one response (skipping 1xx interim answers other than 101). */
class ResponseParser {
  private buffer: Buffer = Buffer.alloc(0);
  private head: { status: number; headers: Record<string, string>; bodyStart: number } | undefined;

  constructor(private readonly method: string) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
  }

  /** A complete answer if the bytes so far hold one; `eof` when the server closed. Throws on garbage. */
  answer(eof: boolean): WireAnswer | undefined {
    for (;;) {
      if (!this.head) {
        const end = this.buffer.indexOf('\r\n\r\n');
        if (end === -1) {
          if (eof && this.buffer.length > 0) throw new Error(`truncated head: ${JSON.stringify(this.buffer.subarray(0, 200).toString('latin1'))}`);
          return undefined;
        }
        const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
        if (!match) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
        const status = Number(match[1]);
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(':');
          if (colon <= 0) throw new Error(`bad header line: ${JSON.stringify(line)}`);
          const name = line.slice(0, colon).trim().toLowerCase();
          const value = line.slice(colon + 1).trim();
          headers[name] = headers[name] === undefined ? value : `${headers[name]}${name === 'set-cookie' ? '\n' : ', '}${value}`;
        }
        if (status >= 100 && status < 200 && status !== 101) {
          // RFC 9110 §15.2: interim answers (100 Continue) precede the final one.
          this.buffer = this.buffer.subarray(end + 4);
          continue;
        }
        this.head = { status, headers, bodyStart: end + 4 };
      }
      const { status, headers, bodyStart } = this.head;
      const rest = this.buffer.subarray(bodyStart);
      // RFC 9112 §6.3: no body after HEAD, 101, 204 and 304.
      if (this.method === 'HEAD' || status === 101 || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
      if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
        const body = dechunk(rest);
        if (body) return { status, headers, body };
        if (eof) throw new Error('truncated chunked body');
        return undefined;
      }
      const length = headers['content-length'];
      if (length !== undefined) {
        const n = Number(length);
        if (!Number.isSafeInteger(n) || n < 0) throw new Error(`bad content-length ${length}`);
        if (rest.length >= n) return { status, headers, body: rest.subarray(0, n) };
        if (eof) throw new Error(`body truncated at ${rest.length} of ${n} bytes`);
        return undefined;
      }
      return eof ? { status, headers, body: rest } : undefined;
    }
  }
}

/** The body of a complete chunked message, or undefined while more bytes are needed. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd === -1) return undefined;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0]!, 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size');
    // The last chunk, then (trailers and) an empty line; trailers are not looked at.
    if (size === 0) return data.length >= lineEnd + 4 ? Buffer.concat(parts) : undefined;
    if (data.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

export interface ExchangeOptions {
  timeoutMs?: number;
  /** Keep the socket open after a 101 and hand it over (WebSocket cases that go on to send frames). */
  keepUpgraded?: boolean;
}

/**
 * Sends `request` on a fresh connection and reads one answer. The server closes first (Connection:
 * close), which keeps TIME_WAIT on its side and lets a long run reuse client ports.
 */
export function exchange(target: Target, request: WireRequest, o: ExchangeOptions = {}): Promise<WireOutcome> {
  const timeoutMs = o.timeoutMs ?? 10_000;
  const bytes = encodeRequest(target, request);
  return new Promise((resolve) => {
    const parser = new ResponseParser(request.method.toUpperCase());
    const socket = connect({ host: target.host, port: target.port });
    let done = false;
    const finish = (outcome: WireOutcome, keep = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      if (!keep) {
        socket.end();
        // A server that keeps the socket open after answering should not hold a slot of the fuzzer.
        setTimeout(() => socket.destroy(), 1_000).unref();
      }
      resolve(outcome);
    };
    const timer = setTimeout(() => {
      finish({ kind: 'no_answer', reason: 'timeout', detail: `no answer within ${timeoutMs} ms` });
      socket.destroy();
    }, timeoutMs);
    const check = (eof: boolean) => {
      try {
        const answer = parser.answer(eof);
        if (answer) {
          const keep = o.keepUpgraded === true && answer.status === 101;
          finish({ kind: 'answer', answer, ...(keep ? { socket } : {}) }, keep);
        } else if (eof) {
          finish({ kind: 'no_answer', reason: 'closed', detail: 'connection closed without an answer' });
        }
      } catch (err) {
        finish({ kind: 'no_answer', reason: 'unparsable', detail: (err as Error).message });
      }
    };
    socket.on('data', (chunk: Buffer) => {
      parser.push(chunk);
      check(false);
    });
    socket.on('end', () => check(true));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // An answer may already be complete in the buffer when the server resets (it answered before reading the whole body).
      let answer: WireAnswer | undefined;
      try {
        answer = parser.answer(false);
      } catch {
        answer = undefined;
      }
      if (answer) finish({ kind: 'answer', answer });
      else finish({ kind: 'no_answer', reason: 'reset', detail: err.code ?? err.message });
    });
    socket.on('close', () => check(true));
    socket.write(bytes, () => {});
  });
}
