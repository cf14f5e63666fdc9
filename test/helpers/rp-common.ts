import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEADLINE_MS } from './until.js';

/** A sign-in a relying party completed: the ID token was verified, and the claims it gave the RP. */
export interface RpLogin {
  /** The verified ID token's claims (OpenID Connect Core §2). */
  idToken: Record<string, unknown>;
  /** The UserInfo answer (Core §5.3), when the RP asked for it. */
  userinfo?: Record<string, unknown>;
  /** The token endpoint's answer as received (RFC 6749 §5.1): id_token, access_token, token_type, expires_in … */
  tokens: Record<string, unknown>;
}

/** A sign-in that failed at the RP: what the library raised (an `error=` redirect, a token error, a bad ID token). */
export interface RpFailure {
  /** The OAuth error code when the OP sent one (RFC 6749 §4.1.2.1, §5.2), else the library's own code or name. */
  error: string;
  description?: string;
  /** The thrown error's message, for a test's failure output. */
  message: string;
}

export type RpOutcome<Login extends RpLogin = RpLogin> = ({ kind: 'login' } & Login) | ({ kind: 'failure' } & RpFailure);

/** Items handed out once each, in arrival order; `next` waits up to `ms` for one (the deadline only bounds a broken run). */
export class AwaitableQueue<T> {
  readonly all: T[] = [];
  private readonly unread: T[] = [];
  private waiters: Array<() => void> = [];

  constructor(private readonly what: string) {}

  push(item: T): void {
    this.all.push(item);
    this.unread.push(item);
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  async next(ms = DEADLINE_MS): Promise<T> {
    const deadline = Date.now() + ms;
    while (this.unread.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${this.what} within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.unread.shift()!;
  }
}

/**
 * What a relying party harness saw, in order, each handed out once: `nextLogin()` takes the next outcome and
 * rejects (with the failure's code) when that outcome was a failure, so a test waiting for a login learns at
 * once why there is none; `nextFailure()` is the converse.
 */
export class RpOutcomes<Login extends RpLogin = RpLogin> {
  readonly logins: Login[] = [];
  readonly failures: RpFailure[] = [];
  private readonly queue = new AwaitableQueue<RpOutcome<Login>>('sign-in outcome at the relying party');

  login(login: Login): void {
    this.logins.push(login);
    this.queue.push({ kind: 'login', ...login });
  }

  failure(failure: RpFailure): void {
    this.failures.push(failure);
    this.queue.push({ kind: 'failure', ...failure });
  }

  async nextLogin(ms = DEADLINE_MS): Promise<Login> {
    const outcome = await this.queue.next(ms);
    if (outcome.kind === 'failure') {
      const description = outcome.description ? ` (${outcome.description})` : '';
      throw new Error(`the relying party's sign-in failed: ${outcome.error}${description}: ${outcome.message}`);
    }
    const { kind: _, ...login } = outcome;
    return login as unknown as Login;
  }

  async nextFailure(ms = DEADLINE_MS): Promise<RpFailure> {
    const outcome = await this.queue.next(ms);
    if (outcome.kind === 'login') throw new Error(`expected a failed sign-in, but the relying party signed in ${String(outcome.idToken.sub)}`);
    const { kind: _, ...failure } = outcome;
    return failure;
  }
}

/**
 * What a relying party library raised, as a failure record: the OAuth error the OP sent when there is one —
 * a ResponseBodyError or AuthorizationResponseError's `error` (RFC 6749 §5.2, §4.1.2.1), or the `error` of a
 * WWW-Authenticate challenge (RFC 6750 §3; a 401 to client_secret_basic) — found along the chain of causes
 * (Auth.js keeps the library's error as `cause.err`); else the first error `code` (openid-client's OAUTH_*),
 * else the error's type or name. The message joins the chain's messages.
 */
export function describeFailure(error: unknown): RpFailure {
  const chain: Error[] = [];
  for (let e: unknown = error; e instanceof Error && chain.length < 8; ) {
    chain.push(e);
    const cause: unknown = e.cause;
    e = cause instanceof Error ? cause : (cause as { err?: unknown } | undefined)?.err;
  }
  if (chain.length === 0) return { error: 'unknown', message: String(error) };
  const sent = chain.map(oauthErrorOf).find((found) => found !== undefined);
  const code = chain.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string');
  const type = (chain[0] as { type?: unknown }).type;
  return {
    error: sent?.error ?? code ?? (typeof type === 'string' ? type : chain[0]!.name),
    ...(sent?.description !== undefined && { description: sent.description }),
    message: chain.map((e) => e.message).filter(Boolean).join(': '),
  };
}

function oauthErrorOf(e: Error): { error: string; description?: string } | undefined {
  const { error, error_description: description } = e as { error?: unknown; error_description?: unknown };
  if (typeof error === 'string') return { error, ...(typeof description === 'string' && { description }) };
  const challenges = e.cause;
  if (!Array.isArray(challenges)) return undefined;
  const parameters = (challenges[0] as { parameters?: Record<string, unknown> } | undefined)?.parameters ?? {};
  if (typeof parameters.error !== 'string') return undefined;
  return { error: parameters.error, ...(typeof parameters.error_description === 'string' && { description: parameters.error_description }) };
}

/** A node:http server on a free loopback port; `close` ends its connections too (a browser keeps them alive). */
export async function serveOnLoopback(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** An HTML page for a browser test to read: `#claims`, `#error` or `#code` holds JSON. */
export function resultPage(res: ServerResponse, status: number, id: 'claims' | 'error' | 'code', value: unknown): void {
  const json = JSON.stringify(value, null, 2).replace(/</g, '\\u003c');
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`<!doctype html><meta charset="utf-8"><title>${id}</title><pre id="${id}">${json.replace(/&/g, '&amp;')}</pre>`);
}
