import WebSocket from 'ws';
import type { FuzzContext } from './context.js';
import type { HttpCase } from './http-cases.js';
import { judgeOAuthAnswer } from './oauth-oracle.js';
import { judgeAnswer, judgeClose, judgeStoredMessages, judgeUnauthenticated, judgeValidAnswer, type Finding } from './oracle.js';
import { validHandshake, type WsCase, type WsFrame } from './websocket-cases.js';
import { exchange, type Target, type WireOutcome, type WireRequest } from './wire.js';

/** One generated case of either kind: an HTTP request, or a WebSocket handshake, session or raw bytes. */
export type FuzzCase = ({ kind: 'http' } & HttpCase) | WsCase;

/** What one case produced: an outcome for the histogram and, if a rule was broken, a finding. */
export interface Observation {
  route: string;
  /** HTTP status ("200"), a WebSocket close ("ws 4400"), or no answer ("none timeout"). */
  outcome: string;
  finding?: Finding;
  /** The request, printable (JSON-escaped, so NUL and lone surrogates stay visible), for samples. */
  request: string;
}

const clip = (text: string, n = 300): string => (text.length > n ? `${text.slice(0, n)}…(${text.length} chars)` : text);

/** A printable description of a request, enough to reproduce it. */
export function describeRequest(request: WireRequest): string {
  const body =
    request.body === undefined ? '' : Buffer.isBuffer(request.body) ? ` body(hex)=${clip(request.body.toString('hex'), 200)}` : ` body=${clip(JSON.stringify(request.body))}`;
  const headers = request.headers.map(([n, v]) => `${n}: ${clip(v, 80)}`);
  return `${request.method} ${clip(JSON.stringify(request.target).slice(1, -1), 200)} ${clip(JSON.stringify(headers), 600)}${body}`;
}

function fromOutcome(route: string, request: WireRequest, description: string, outcome: WireOutcome, c?: Pick<HttpCase, 'valid' | 'unauthenticated' | 'storedMessages' | 'oauth'>, baseUrl = ''): Observation {
  const valid = c?.valid;
  if (outcome.kind === 'no_answer') {
    const finding: Finding | undefined = valid ? { kind: 'valid_request_refused', signature: `no answer (${outcome.reason})`, detail: outcome.detail } : undefined;
    return { route, outcome: `none ${outcome.reason}`, request: description, ...(finding ? { finding } : {}) };
  }
  const finding =
    (c?.oauth ? judgeOAuthAnswer(outcome.answer, request.method, c.oauth.redirectUris, baseUrl) : judgeAnswer(outcome.answer, request.method)) ??
    (valid ? judgeValidAnswer(outcome.answer, valid.refusals, request.method) : undefined) ??
    (c?.unauthenticated ? judgeUnauthenticated(outcome.answer) : undefined) ??
    (c?.storedMessages ? judgeStoredMessages(outcome.answer) : undefined);
  return { route, outcome: String(outcome.answer.status), request: description, ...(finding ? { finding } : {}) };
}

export interface RunOptions {
  /** Per request; a long-poll may be held for the service's longPollHoldSeconds. */
  timeoutMs?: number;
}

export async function runCase(target: Target, ctx: FuzzContext, c: FuzzCase, o: RunOptions = {}): Promise<Observation> {
  const timeoutMs = o.timeoutMs ?? 10_000;
  switch (c.kind) {
    case 'http':
      return fromOutcome(c.route, c.request, describeRequest(c.request), await exchange(target, c.request, { timeoutMs }), c, ctx.baseUrl);
    case 'ws-handshake':
      return fromOutcome(c.route, c.request, describeRequest(c.request), await exchange(target, c.request, { timeoutMs }));
    case 'ws-raw':
      return runRaw(target, c, timeoutMs);
    case 'ws-frames':
      return runFrames(ctx, c, timeoutMs);
  }
}

/** Sends the raw bytes after a valid handshake, half-closes, and reads the server's close frame if any. */
async function runRaw(target: Target, c: Extract<WsCase, { kind: 'ws-raw' }>, timeoutMs: number): Promise<Observation> {
  const request = validHandshake(c.headers);
  const description = `${describeRequest(request)} then bytes(hex)=${clip(c.bytes.toString('hex'), 200)}`;
  const outcome = await exchange(target, request, { timeoutMs, keepUpgraded: true });
  if (outcome.kind !== 'answer' || outcome.answer.status !== 101 || !outcome.socket) return fromOutcome(c.route, request, description, outcome);
  const socket = outcome.socket;
  const received: Buffer[] = [outcome.answer.body];
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve();
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.write(c.bytes, () => socket.end());
  });
  const data = Buffer.concat(received);
  // A close frame from the server (unmasked, RFC 6455 §5.5.1): 0x88, length, then the code.
  const at = data.indexOf(0x88);
  const code = at !== -1 && data.length >= at + 4 && (data[at + 1]! & 0x7f) >= 2 ? data.readUInt16BE(at + 2) : undefined;
  const finding = code === undefined ? undefined : judgeClose(code, data.subarray(at + 4, at + 2 + (data[at + 1]! & 0x7f)).toString('utf8'));
  return { route: c.route, outcome: code === undefined ? 'ws closed' : `ws ${code}`, request: description, ...(finding ? { finding } : {}) };
}

function send(socket: WebSocket, frame: WsFrame): void {
  const ignore = () => {};
  switch (frame.type) {
    case 'text':
      return socket.send(frame.data, ignore);
    case 'binary':
      return socket.send(frame.data, { binary: true }, ignore);
    case 'fragmented':
      frame.parts.forEach((part, i) => socket.send(part, { fin: i === frame.parts.length - 1 }, ignore));
      return;
    case 'burst':
      for (let i = 0; i < frame.count; i++) socket.send(frame.data, ignore);
      return;
  }
}

const describeFrames = (frames: WsFrame[]): string =>
  clip(
    JSON.stringify(
      frames.map((f) =>
        f.type === 'text' ? clip(f.data, 120) : f.type === 'binary' ? `binary:${f.data.toString('hex').slice(0, 60)}` : f.type === 'burst' ? `${f.count}× ${f.data}` : `fragments:${f.parts.join('|')}`,
      ),
    ),
    800,
  );

/**
 * Opens a socket like a page does, sends the frames, then waits for the pong of a protocol ping
 * (so the frames before it were read) and closes; the close code the server sent or echoed is judged.
 */
async function runFrames(ctx: FuzzContext, c: Extract<WsCase, { kind: 'ws-frames' }>, timeoutMs: number): Promise<Observation> {
  const description = `WS ${JSON.stringify(Object.keys(c.headers))} frames=${describeFrames(c.frames)}`;
  const socket = new WebSocket(ctx.wsUrl, 'ls', { headers: c.headers, handshakeTimeout: timeoutMs });
  const opened = await new Promise<Observation | undefined>((resolve) => {
    socket.once('open', () => resolve(undefined));
    socket.once('unexpected-response', (_request, response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const headers = Object.fromEntries(Object.entries(response.headers).map(([k, v]) => [k, String(v)]));
        const answer = { status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks) };
        const finding = judgeAnswer(answer);
        resolve({ route: c.route, outcome: String(answer.status), request: description, ...(finding ? { finding } : {}) });
        socket.terminate();
      });
    });
    socket.once('error', (err) => resolve({ route: c.route, outcome: `none ${(err as NodeJS.ErrnoException).code ?? 'error'}`, request: description }));
  });
  socket.on('error', () => {});
  if (opened) return opened;

  let closed: { code: number; reason: string } | undefined;
  const closing = new Promise<void>((resolve) => {
    socket.on('close', (code, reason) => {
      closed = { code, reason: reason.toString() };
      resolve();
    });
  });
  const bounded = (p: Promise<unknown>) => Promise.race([p, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  for (const frame of c.frames) send(socket, frame);
  if (socket.readyState === WebSocket.OPEN) {
    const pong = new Promise((resolve) => socket.once('pong', resolve));
    socket.ping();
    await bounded(Promise.race([pong, closing]));
  }
  if (socket.readyState === WebSocket.OPEN) socket.close(1000);
  await bounded(closing);
  if (!closed) socket.terminate();
  const finding = closed ? judgeClose(closed.code, closed.reason) : undefined;
  return { route: c.route, outcome: closed ? `ws ${closed.code}` : 'ws no close', request: description, ...(finding ? { finding } : {}) };
}
