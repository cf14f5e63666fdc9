/**
 * Child server for the channel benchmarks: the real tabwire app (buildApp, own SQLite file, silent
 * log) plus bench-only control routes under /__bench/ that are added here, never in src/:
 *
 *   POST /__bench/gc            full GC (needs --expose-gc), then process.memoryUsage()
 *   GET  /__bench/stats         hub.snapshot(), process.memoryUsage() and the number of open files
 *   POST /__bench/deliver-run   {prefix, tabs, count, perSecond}: `count` events via hub.deliver to random
 *                               tabs tabIdOf(prefix, i), paced; each event's data carries the CLOCK_MONOTONIC
 *                               time (ns) just before hub.deliver. Answers when the last one was handed over.
 *   POST /__bench/deliver-all   {prefix, tabs}: one event to every tab tabIdOf(prefix, i)
 *
 * Args: one JSON object {port, sqliteFile, pingTimeoutSeconds?, longPollHoldSeconds?, tabIdleSeconds?}.
 */
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { settleHeap } from '../lib/channel-heap.js';
import { tabIdOf } from '../lib/channel-ids.js';
import { serveAsChild } from './protocol.js';

interface Args {
  port: number;
  sqliteFile: string;
  pingTimeoutSeconds?: number;
  longPollHoldSeconds?: number;
  tabIdleSeconds?: number;
}

await serveAsChild(async () => {
  const args = JSON.parse(process.argv[2] ?? '{}') as Args;
  if (!Number.isInteger(args.port) || args.port <= 0 || !args.sqliteFile) throw new Error('usage: channel-tabwire.ts <json args>');
  const config = loadConfig(
    {},
    {
      port: args.port,
      sqliteFile: args.sqliteFile,
      logLevel: 'silent',
      ...(args.pingTimeoutSeconds === undefined ? {} : { pingTimeoutSeconds: args.pingTimeoutSeconds }),
      ...(args.longPollHoldSeconds === undefined ? {} : { longPollHoldSeconds: args.longPollHoldSeconds }),
      ...(args.tabIdleSeconds === undefined ? {} : { tabIdleSeconds: args.tabIdleSeconds }),
    },
  );
  const app = await buildApp(config);
  const { hub, store } = app.tabwire;
  /** Events are addressed to a tab of a session: look each tab's session up once, before any timing. */
  const addresses = async (prefix: string, tabs: number) => {
    const out = [];
    for (let i = 0; i < tabs; i++) {
      const tabId = tabIdOf(prefix, i);
      out.push({ tabId, session: (await store.tabs.sessionOf(tabId)) ?? 'unbound' });
    }
    return out;
  };

  app.post('/__bench/gc', async () => settleHeap());
  app.get('/__bench/stats', async () => ({ hub: hub.snapshot(), memory: process.memoryUsage(), openFiles: readdirSync('/proc/self/fd').length }));

  app.post('/__bench/deliver-run', async (request) => {
    const o = request.body as { prefix: string; tabs: number; count: number; perSecond: number };
    const count = Math.min(o.count, 100_000);
    const intervalNs = 1e9 / o.perSecond;
    const targets = await addresses(o.prefix, o.tabs);
    const start = process.hrtime.bigint();
    let lateNs = 0n;
    for (let i = 0; i < count; i++) {
      const due = start + BigInt(Math.round(i * intervalNs));
      let now = process.hrtime.bigint();
      if (due > now) {
        await sleep(Number(due - now) / 1e6);
        now = process.hrtime.bigint();
      }
      if (now - due > lateNs) lateNs = now - due;
      const tab = targets[Math.floor(Math.random() * o.tabs)]!;
      const sentNs = process.hrtime.bigint();
      await hub.deliver(tab, { type: 'BenchLatency', data: { n: i, t: sentNs.toString() } });
    }
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    return { count, ms, maxLateMs: Number(lateNs) / 1e6 };
  });

  app.post('/__bench/deliver-all', async (request) => {
    const o = request.body as { prefix: string; tabs: number };
    const targets = await addresses(o.prefix, o.tabs);
    for (let i = 0; i < o.tabs; i++) await hub.deliver(targets[i]!, { type: 'BenchRelease', data: i });
    return { delivered: o.tabs };
  });

  await app.listen({ host: '127.0.0.1', port: args.port });
  return { port: args.port, close: () => app.close() };
});
