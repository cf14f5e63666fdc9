import type { KeyObject } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { readKeyFile } from '../../src/identity/key-file.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { until } from './until.js';

/** What a login page and a signing app do against a cluster, with real requests (test/cluster/). */

export interface PageSession {
  tabId: string;
  /** `name=value` of the session cookie. */
  cookie: string;
}

export interface Signer {
  legalId: string;
  key: KeyObject;
}

/** Ada's approved identity, made with the operator CLI of `cluster`; her key file goes in `dir`. */
export async function createSigner(cluster: { cli(args: string[]): Promise<string> }, dir: string): Promise<Signer> {
  const keyFile = join(dir, 'ada.key');
  await cluster.cli(['identity', 'create', '--prop', 'FIRST=Ada', '--key-out', keyFile, '--approve']);
  return readKeyFile(keyFile);
}

const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** The same path on another base URL (a node of the cluster, or the balancer). */
export const on = (base: string, url: string): string => base + new URL(url).pathname;

/**
 * One login: a QR request for the page's tab on `qrBase`, then the decision on `signBase` (the signing app's
 * GET and POST; with a `signer`, a real signature, else the development approval). Resolves with the code's
 * signUrl once the decision was taken (HTTP 200); the result is then on its way to the tab.
 */
export async function settleCode(o: {
  qrBase: string;
  signBase: string;
  page: PageSession;
  purpose: string;
  decision: 'approve' | 'reject';
  signer?: Signer;
  serviceId?: string;
}): Promise<string> {
  const signUrl = await requestSignUrl(o.qrBase, o.page, o.purpose, o.serviceId);
  const url = on(o.signBase, signUrl);
  if (o.signer) {
    const info = await fetchSignInfo(url);
    const answer = await postDecision(url, info, o.signer.legalId, o.signer.key, o.decision);
    if (answer.state !== (o.decision === 'approve' ? 'approved' : 'rejected')) throw new Error(`decision answered ${JSON.stringify(answer)}`);
  } else {
    const answer = await postJson(`${url}/Dev`, { decision: o.decision });
    if (answer.status !== 200) throw new Error(`development approval answered ${answer.status}: ${await answer.text()}`);
  }
  return signUrl;
}

/** A page's QR request for its tab on `base` (browser-only mode unless `serviceId`): the signUrl it was answered. */
export async function requestSignUrl(base: string, page: PageSession, purpose: string, serviceId = ''): Promise<string> {
  const qr = await postJson(`${base}/QuickLogin`, { mode: 'text', purpose, serviceId, tab: page.tabId }, { cookie: page.cookie });
  if (qr.status !== 200) throw new Error(`QR request answered ${qr.status}: ${await qr.text()}`);
  return ((await qr.json()) as { signUrl: string }).signUrl;
}

/**
 * A login whose signature goes to a node run with a fixture that holds it at one instant of the signature's
 * path and then writes `heldFile` (test/fixtures/hold-*.mjs): the QR request on `qrBase`, the signing app's
 * fetch and approval on `doomedBase`, then `kill()` once the node is held. The approval is never answered.
 * Resolves with the code's signUrl and what the fetch showed.
 */
export async function signOnHeldNode(o: {
  qrBase: string;
  doomedBase: string;
  page: PageSession;
  purpose: string;
  signer: Signer;
  heldFile: string;
  /** Where the fixture holds the node, for the wait's message. */
  instant: string;
  kill: () => Promise<unknown>;
}): Promise<{ signUrl: string; info: Awaited<ReturnType<typeof fetchSignInfo>> }> {
  rmSync(o.heldFile, { force: true });
  const signUrl = await requestSignUrl(o.qrBase, o.page, o.purpose);
  const info = await fetchSignInfo(on(o.doomedBase, signUrl));
  const approval = postDecision(on(o.doomedBase, signUrl), info, o.signer.legalId, o.signer.key, 'approve');
  approval.catch(() => undefined);
  await until(() => existsSync(o.heldFile), `the node held ${o.instant}`, 60_000);
  await o.kill();
  return { signUrl, info };
}

/** The purpose of a result event (SignatureReceived, SignatureRejected, SignatureReceivedBE carries none). */
export const purposeOf = (frame: EventFrame): string | undefined => (frame.data as { Purpose?: string } | null)?.Purpose;

/**
 * A page on the long-poll transport as the event script runs it: `POST /ClientEvents` again at once after
 * each answer, with `X-TabID`, the session cookie and `X-Last-Event-ID` once it saw an event. `base()` is
 * asked before every poll (a balancer's URL, or a node the test picks).
 */
export class LongPollPage {
  /** Every frame but NOP, in arrival order (EventsLost included). */
  readonly frames: EventFrame[] = [];
  /** Answers other than 200 (status and body), in order. */
  readonly failures: string[] = [];
  cookie = '';
  lastEventId: number | undefined;
  polls = 0;
  private running: Promise<void> | undefined;
  private stopping = false;
  private abort: AbortController | undefined;

  constructor(
    private readonly base: () => string,
    readonly tabId: string,
  ) {}

  get page(): PageSession {
    return { tabId: this.tabId, cookie: this.cookie };
  }

  /** One poll; resolves with its status once answered. */
  async poll(): Promise<number> {
    const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': this.tabId };
    if (this.cookie) headers.cookie = this.cookie;
    if (this.lastEventId !== undefined) headers['x-last-event-id'] = String(this.lastEventId);
    this.abort = new AbortController();
    const response = await fetch(`${this.base()}/ClientEvents`, { method: 'POST', headers, body: 'http://127.0.0.1/page', signal: this.abort.signal });
    this.polls++;
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0]!;
    const text = await response.text();
    if (response.status !== 200) {
      this.failures.push(`${response.status} ${text}`);
      return response.status;
    }
    for (const frame of JSON.parse(text) as EventFrame[]) {
      if (frame.type === 'NOP') continue;
      this.frames.push(frame);
      if (typeof frame.id === 'number') this.lastEventId = frame.id;
    }
    return 200;
  }

  /** Polls until `stop`; a poll that fails is tried again after `retryMs` (the reference script waits 5 s). */
  start(retryMs = 200): void {
    this.running = (async () => {
      while (!this.stopping) {
        let ok = false;
        try {
          ok = (await this.poll()) === 200;
        } catch (err) {
          if (this.stopping) return;
          this.failures.push(String(err));
        }
        if (!ok && !this.stopping) await new Promise((r) => setTimeout(r, retryMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.abort?.abort();
    await this.running;
  }

  /** Ids of the frames that have one, in arrival order. */
  ids(): number[] {
    return this.frames.filter((f) => typeof f.id === 'number').map((f) => f.id);
  }
}

/** Runs `task(k)` for k = 0..count-1 with at most `parallel` at once. */
export async function inParallel(count: number, parallel: number, task: (k: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}
