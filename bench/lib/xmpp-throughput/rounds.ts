/**
 * The rounds of the XMPP throughput benchmark (bench/xmpp-throughput.ts): the same messages through the
 * same Prosody, counted either by a bare component or at tabwire's WebSocket tabs, each receiver in a
 * child process of its own.
 */
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { ProsodyServer } from '../../../test/helpers/prosody.js';
import type { TestXmppClient } from '../../../test/helpers/xmpp-client.js';
import { CpuWindow, expect, ownCpu, waitUntil, type CpuProbe } from '../common.js';
import { freePort, startChild, type ChildServer } from '../processes/child.js';
import { openRegistered } from '../load/registered-socket.js';
import { Counter, pump } from './pump.js';
import { N, N_TABS, ROUND_TIMEOUT_MS, WARMUP, type Round } from './settings.js';

/** What every round shares: the logged-in clients and where they send, Prosody and its CPU, the temp dir. */
export interface XmppRig {
  dir: string;
  prosody: ProsodyServer;
  clients: TestXmppClient[];
  /** The address every message goes to: the agent account on Prosody's component domain. */
  to: string;
  prosodyCpu: CpuProbe;
  /** Every socket a round opens is added here, so the run's `finally` closes them should a round fail. */
  sockets: Array<Socket | WebSocket>;
}

/** Runs bare and tabwire rounds on demand and keeps them in order, with what the last tabwire round saw. */
export class ThroughputRounds {
  /** The measured rounds, in the order they ran. */
  readonly rounds: Round[] = [];
  /** The receiver of the round in progress, for the run's `finally` to stop should a round fail. */
  child: ChildServer | undefined;
  /** Handlers registered in the last tabwire round (one per tab). */
  handlersRegistered = 0;
  /** Frames the busiest tab of the last tabwire round got, warm-up included. */
  framesOnBusiestTab = 0;
  /** Messages sent so far: each message gets its own id. */
  private seq = 0;

  constructor(private readonly rig: XmppRig) {}

  /** WARMUP uncounted messages, then N counted through `counter`, with the CPU of this process, the receiver and Prosody. */
  private async measure(kind: Round['kind'], counter: Counter, receiver: ChildServer): Promise<Round> {
    const { clients, to, prosodyCpu } = this.rig;
    const warm = await pump(clients, to, WARMUP, () => counter.value, counter.wait, this.seq);
    this.seq += WARMUP;
    expect(warm.lost === 0, `${kind} warm-up: ${warm.lost} of ${WARMUP} messages not counted within ${ROUND_TIMEOUT_MS} ms`);
    await sleep(200);
    const window = await CpuWindow.open([ownCpu, () => receiver.cpuMicros(), prosodyCpu]);
    const { ms, lost } = await pump(clients, to, N, () => counter.value, counter.wait, this.seq);
    this.seq += N;
    const cpu = await window.close();
    expect(lost === 0, `${kind} round: ${lost} of ${N} messages not counted within ${ROUND_TIMEOUT_MS} ms`);
    return { kind, count: N, ms, rate: (N * 1000) / ms, benchCpu: cpu.cpuPercent[0]!, receiverCpu: cpu.cpuPercent[1]!, prosodyCpu: cpu.cpuPercent[2]!, other: cpu.otherPercent };
  }

  /** A bare round: @xmpp/component in a child, one byte per message to a TCP socket counted here. */
  async bare(): Promise<void> {
    const { prosody: p, sockets } = this.rig;
    const port = await freePort();
    const child = await startChild('bare component', new URL('../../servers/xmpp-bare-component.ts', import.meta.url), [String(port), p.componentService, p.componentDomain, p.componentSecret]);
    this.child = child;
    const counter = new Counter();
    const socket = connect({ host: '127.0.0.1', port });
    sockets.push(socket);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => counter.add(chunk.length));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    await sleep(50);
    this.rounds.push(await this.measure('bare', counter, child));
    socket.destroy();
    await child.stop(); // one component per domain: hand it back before the next round
    this.child = undefined;
  }

  /** A tabwire round: tabwire in a child, N_TABS WebSocket tabs with a chat handler each, frames counted at the tabs. */
  async tabwire(): Promise<void> {
    const { prosody: p, sockets, dir } = this.rig;
    const port = await freePort();
    // A new store per round, as for a new service: the account is created again.
    const file = join(dir, `tabwire-${this.rounds.length}.sqlite`);
    const child = await startChild('tabwire', new URL('../../servers/xmpp-tabwire.ts', import.meta.url), [String(port), file, p.componentService, p.componentDomain, p.componentSecret]);
    this.child = child;
    const base = `http://127.0.0.1:${port}`;
    const online = await waitUntil(async () => ((await (await fetch(`${base}/readyz`)).json()) as { xmpp: string }).xmpp === 'online', 15_000, 100);
    expect(online, 'tabwire\'s component did not come online within 15 s');
    const call = async (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
      const r = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const text = await r.text();
      expect(r.status === 200 || r.status === 201, `POST ${path} answered ${r.status}: ${text.slice(0, 300)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    await call('/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
    const { jwt } = (await call('/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })) as { jwt: string };

    const counter = new Counter();
    const perTab: number[] = [];
    const tabs: Array<{ tabId: string; cookie: string }> = [];
    this.handlersRegistered = 0; // per round: each round is a new tabwire process
    for (let t = 0; t < N_TABS; t++) {
      const tabId = randomUUID();
      // Resolves once the server answered the Register (its CheckServerInstance, which is not counted
      // below), so the tab is registered before its handler is.
      const { ws, cookie } = await openRegistered({ port, origin: base, tabId });
      sockets.push(ws);
      perTab.push(0);
      ws.on('message', () => {
        perTab[t]!++;
        counter.add(1);
      });
      tabs.push({ tabId, cookie });
    }
    for (const { tabId, cookie } of tabs) {
      await call('/Agent/Xmpp/RegisterEventHandler', { tabId, type: 'chat', function: 'OnChat' }, { authorization: `Bearer ${jwt}`, cookie });
      this.handlersRegistered++;
    }
    this.rounds.push(await this.measure('tabwire', counter, child));
    this.framesOnBusiestTab = Math.max(...perTab);
    for (const s of sockets.splice(0)) (s as WebSocket).terminate?.();
    await child.stop();
    this.child = undefined;
  }
}
