import { EventTypes, type QuickLoginRejection, type QuickLoginResult } from '../protocol/events.js';
import type { EventFrame } from '../protocol/frames.js';
import { ResultVerificationError, verifyResultSignature, type ResultKeyJwk } from '../quicklogin/verify-result.js';
import { UsageError } from './args.js';
import { EventTab } from './event-tab.js';
import { CommandFailure, ExitStatus } from './failure.js';
import { problemOrJson, SignerError } from './signer.js';
import { printable } from './printable.js';
import { formatQr, useColour } from './terminal-qr.js';

/**
 * `tabwire login --service URL …`: a relying party in a terminal (docs/cli.md "login"). It is a tab of
 * its own session (event-tab.ts), asks for a `text`-mode QR code for that tab, prints it, replaces it
 * when it expires, and on `SignatureReceived` verifies the result's `ServerSignature` with the keys the
 * service publishes before printing the identity.
 */

/**
 * How the person runs this same command line again: through the npm script in a clone (where no `tabwire`
 * is on PATH, docs/cli.md), else the installed `tabwire`.
 */
const selfCommand = (env: Readonly<Record<string, string | undefined>>): string =>
  env.npm_lifecycle_event === 'tabwire' ? 'npm run -s tabwire --' : 'tabwire';

export interface LoginArgs {
  service: string;
  purpose: string;
  propertyFilter: string | undefined;
  attachmentFilter: string | undefined;
  /** The `--origin` value: an origin, `none`, or undefined for the service's own origin. */
  origin: string | undefined;
  json: boolean;
  timeoutSeconds: number;
  checkEverySeconds: number;
}

export interface LoginIo {
  /** Where the QR code and progress go, so that stdout carries only the identity (`--json | jq`). */
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
}

/** Bounds each HTTP request, so a service that stops answering fails the command instead of hanging it. */
const HTTP_TIMEOUT_MS = 30_000;

const ORIGIN_HINT = 'Pass --origin with an origin among the service\'s allowedOrigins, or --origin none to send no Origin.';

type Outcome =
  | { kind: 'result'; data: unknown }
  | { kind: 'rejected'; data: QuickLoginRejection }
  | { kind: 'timeout' }
  | { kind: 'failed'; error: unknown };

/** The service's base URL from `--service` (no query or fragment; a path prefix is kept). */
export function parseServiceUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--service must be the service's base URL, such as https://auth.example.org (got "${text}")`, 'login');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError(`--service must be an http(s) URL (got "${text}")`, 'login');
  url.search = '';
  url.hash = '';
  return url;
}

/** The Origin sent: the service's own origin by default (always allowed), another allowed origin, or none. */
export function parseOrigin(text: string | undefined, service: URL): string | null {
  if (text === undefined) return service.origin;
  if (text === 'none') return null;
  let origin: string | undefined;
  try {
    origin = new URL(text).origin;
  } catch {
    origin = undefined;
  }
  if (origin !== text || origin === 'null') {
    throw new UsageError(`--origin must be an origin such as https://shop.example (scheme, host, optional port; no path), or none (got "${text}")`, 'login');
  }
  return origin;
}

function describeIdentity(result: QuickLoginResult, kid: string | undefined, keysUrl: string): string {
  const time = (seconds: number) => (Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : '?');
  const properties = Object.entries(result.Properties ?? {});
  const width = Math.max(0, ...properties.map(([name]) => printable(name).length));
  return [
    `Logged in: ${printable(result.Id)} (${printable(result.State)}, provider ${printable(result.Provider)})`,
    ...(properties.length === 0 ? ['  (no properties shared)'] : properties.map(([name, value]) => `  ${printable(name).padEnd(width)}  ${printable(String(value))}`)),
    ...(result.Attachments?.length ? [`  attachments: ${result.Attachments.map((a) => printable(a.FileName)).join(', ')}`] : []),
    `Identity valid ${time(result.From)} to ${time(result.To)}.`,
    `ServerSignature verified with key ${kid ?? '(no kid)'} of ${keysUrl}.`,
    '',
  ].join('\n');
}

export async function loginCommand(args: LoginArgs, io: LoginIo): Promise<string> {
  const service = parseServiceUrl(args.service);
  const origin = parseOrigin(args.origin, service);
  const base = service.href.replace(/\/$/, '');
  const say = (text: string) => io.stderr.write(`${text}\n`);
  const colour = useColour(io.stderr, io.env);

  // Everything that ends the wait (a result, a rejection, the timeout, a failure) settles this once.
  let finished = false;
  let settle: (outcome: Outcome) => void = () => undefined;
  const outcome = new Promise<Outcome>((resolve) => {
    settle = (o) => {
      if (!finished) resolve(o);
      finished = true;
    };
  });

  let signUrl = '';
  let refreshing = false;
  const requestQr = async (): Promise<void> => {
    const response = await fetch(`${base}/QuickLogin`, {
      method: 'POST',
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
      headers: { 'content-type': 'application/json', accept: 'application/json', cookie: tab.cookie, ...(origin === null ? {} : { origin }) },
      body: JSON.stringify({
        mode: 'text',
        purpose: args.purpose,
        serviceId: '', // browser-only delivery: the result comes to this tab (docs/signing.md)
        tab: tab.tabId,
        ...(args.propertyFilter === undefined ? {} : { propertyFilter: args.propertyFilter }),
        ...(args.attachmentFilter === undefined ? {} : { attachmentFilter: args.attachmentFilter }),
      }),
    });
    const qr = (await problemOrJson(response).catch((error: unknown) => {
      if (error instanceof SignerError && error.code === 'origin_not_allowed') {
        throw new CommandFailure(`refused (${error.status} ${error.code}): ${error.message}\n${ORIGIN_HINT}`);
      }
      throw error;
    })) as { signUrl: string; text: string };
    signUrl = qr.signUrl;
    say(`${formatQr(qr.text, colour)}\nsignUrl: ${printable(signUrl)}`);
    say(`Scan it with a signing app, or sign in another terminal:\n  ${selfCommand(io.env)} sign '${printable(signUrl)}' --key FILE`);
    say(`Waiting for a signature (at most ${args.timeoutSeconds} s; Ctrl-C stops)...`);
  };
  const refresh = (why: string): void => {
    if (refreshing || finished) return;
    refreshing = true;
    say(why);
    requestQr().then(
      () => (refreshing = false),
      (error: unknown) => settle({ kind: 'failed', error }),
    );
  };

  const tab: EventTab = new EventTab({
    service,
    origin,
    onEvent: (frame: EventFrame) => {
      if (frame.type === EventTypes.SignatureReceived) settle({ kind: 'result', data: frame.data });
      else if (frame.type === EventTypes.SignatureRejected) settle({ kind: 'rejected', data: frame.data as QuickLoginRejection });
      // The stream lost events (docs/events.md "Event streams"): ask again, as a page would.
      else if (frame.type === EventTypes.EventsLost) refresh('Events were lost while the channel was down; a new code:');
    },
    onFailure: (error) => settle({ kind: 'failed', error }),
    onNotice: say,
  });

  // The code's own state, from the service's clock: 410 (expired) or 404 (gone) means show a new one,
  // as the reference page does; 409 means it was signed, and the result is on its way to the tab.
  let checking = false;
  const check = async (): Promise<void> => {
    if (checking || refreshing || signUrl === '') return;
    checking = true;
    const status = await fetch(signUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) }).then(
      (r) => (void r.body?.cancel(), r.status),
      () => 0, // unreachable for a moment: the next check asks again
    );
    checking = false;
    if (status === 410 || status === 404) refresh('The code expired; a new one:');
  };

  let checker: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    // The timeout covers the set-up too: a service that accepts the socket but never confirms the Register
    // must not hold the terminal for ever.
    timer = setTimeout(() => settle({ kind: 'timeout' }), args.timeoutSeconds * 1000);
    void (async () => {
      await tab.open().catch((error: unknown) => {
        if (error instanceof Error && error.message.includes('origin_not_allowed')) throw new CommandFailure(`${error.message}\n${ORIGIN_HINT}`);
        throw error;
      });
      if (finished) return;
      await requestQr();
      if (!finished) checker = setInterval(() => void check(), args.checkEverySeconds * 1000);
    })().catch((error: unknown) => settle({ kind: 'failed', error }));
    const end = await outcome;
    switch (end.kind) {
      case 'failed':
        throw end.error;
      case 'timeout':
        throw new CommandFailure(`no answer within ${args.timeoutSeconds} s (--timeout); nobody is logged in`, ExitStatus.timedOut);
      case 'rejected':
        throw new CommandFailure(`the login was rejected by ${printable(String(end.data?.Id ?? 'the signer'))}`, ExitStatus.rejected);
      case 'result':
        return await verified(end.data);
    }
  } finally {
    clearInterval(checker);
    clearTimeout(timer);
    tab.close();
  }

  async function verified(data: unknown): Promise<string> {
    const result = data as QuickLoginResult;
    const keysUrl = `${base}/.well-known/tabwire/result-keys`;
    const { keys } = (await problemOrJson(await fetch(keysUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) }))) as { keys: ResultKeyJwk[] };
    let kid: string | undefined;
    try {
      kid = verifyResultSignature(result, Array.isArray(keys) ? keys : []);
    } catch (error) {
      if (error instanceof ResultVerificationError) throw new CommandFailure(`refused the result: ${error.message}`);
      throw error;
    }
    // Signed by the service, but for this request? The purpose is part of what was signed.
    if (result.Purpose !== args.purpose) throw new CommandFailure('refused the result: it was signed for another purpose');
    return args.json ? `${JSON.stringify(result, null, 2)}\n` : describeIdentity(result, kid, keysUrl);
  }
}
