/**
 * XMPP throughput benchmark: messages/s from real XMPP clients through a private Prosody to
 * tabwire's component and on to WebSocket tabs, next to the rate at which the same Prosody hands
 * the same messages to a bare component that only counts them (no tabwire code), in the same run.
 * Rounds: bare, tabwire, bare (the second bare round shows drift). See docs/benchmarks.md.
 */
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { startProsody, type ProsodyServer } from '../test/helpers/prosody.js';
import { startXmppClient, type TestXmppClient } from '../test/helpers/xmpp-client.js';
import { expect } from './lib/common.js';
import { waitForOtherRuns } from './lib/measure/other-runs.js';
import { prosodyCpuProbe } from './lib/measure/prosody-cpu.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';
import { xmppThroughputReport } from './lib/xmpp-throughput/report.js';
import { ThroughputRounds } from './lib/xmpp-throughput/rounds.js';
import { N_TABS, TABWIRE_ROUNDS, USERS } from './lib/xmpp-throughput/settings.js';

/** The XMPP throughput benchmark: bare, then tabwire and bare rounds in turn, through one private Prosody. */
export const xmppThroughput: Benchmark = {
  name: 'xmpp-throughput',
  description: `XMPP messages/s from ${USERS} clients through Prosody to tabwire and ${N_TABS} WebSocket tabs vs to a bare counting component`,
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let prosody: ProsodyServer | undefined;
      let runner: ThroughputRounds | undefined;
      const clients: TestXmppClient[] = [];
      const sockets: Array<Socket | WebSocket> = [];
      try {
        const { waitedMs, idle } = await waitForOtherRuns();
        prosody = await startProsody();
        const p = prosody;
        for (let u = 0; u < USERS; u++) await p.register(`user${u}`, `password ${u}`);
        for (let u = 0; u < USERS; u++) clients.push(await startXmppClient({ service: p.c2sService, domain: p.domain, username: `user${u}`, password: `password ${u}` }));
        const prosodyCpu = prosodyCpuProbe(p);
        expect((await prosodyCpu()) > 0, 'cannot read Prosody\'s CPU time (pidfile or /proc)');
        const to = `agent@${p.componentDomain}`;
        runner = new ThroughputRounds({ dir, prosody: p, clients, to, prosodyCpu, sockets });

        await runner.bare();
        for (let r = 0; r < TABWIRE_ROUNDS; r++) {
          await runner.tabwire();
          await runner.bare();
        }

        const { rounds, handlersRegistered, framesOnBusiestTab } = runner;
        return xmppThroughputReport({ title: xmppThroughput.description, rounds, to, handlersRegistered, framesOnBusiestTab, idle, waitedMs });
      } finally {
        for (const s of sockets) (s instanceof WebSocket ? s.terminate() : s.destroy());
        await runner?.child?.stop();
        for (const c of clients) await c.stop();
        await prosody?.stop();
      }
    });
  },
};
