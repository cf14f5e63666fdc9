/**
 * XMPP router benchmark, in-process: `MemoryHandlerRegistry.match` with 10,000 registered handlers over
 * 1,000 agent accounts, and `MessageRouter.route` for messages that reach a handler on a local tab
 * (real Hub on a MemoryBroker, a fake TabConnection that counts) and for messages that are stored
 * (SQLite). No budget. See docs/benchmarks.md.
 */
import { join } from 'node:path';
import pino from 'pino';
import { MemoryHandlerRegistry } from '../src/handlers/memory-handlers.js';
import { specificity, type Selector } from '../src/handlers/selector.js';
import type { InboundMessage } from '../src/protocol/xmpp-message.js';
import { MessageRouter } from '../src/agent/router.js';
import { systemClock } from '../src/clock.js';
import type { TabConnection } from '../src/hub/connection.js';
import { Hub } from '../src/hub/hub.js';
import { MemoryBroker } from '../src/broker/memory-broker.js';
import type { EventFrame } from '../src/protocol/frames.js';
import { openSqliteStore } from '../src/store/sqlite/open.js';
import type { Store } from '../src/store/stores.js';
import { OTHER_CPU_LIMIT, expect, machineLine, revision, versionOf, waitForQuiet } from './lib/common.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { formatMicros, formatRate, table } from './lib/measure/stats.js';
import { measureInterleaved, type OperationSpec } from './lib/measure/timing.js';
import type { BenchReport, Benchmark, Measurement } from './lib/measure/types.js';

const ACCOUNTS = 1_000;
const HANDLERS_PER_ACCOUNT = 10;
const TABS_PER_ACCOUNT = 2;
/** Accounts without handlers: their messages are stored. */
const STORAGE_ACCOUNTS = 1_000;
const DOMAIN = 'agents.bench.test';
const POOL = 4_096;
const TIMING = { rounds: 5, sliceMs: 300, warmupMs: 300 };

const NAMESPACES = Array.from({ length: 20 }, (_, i) => `urn:bench:ns:${i}`);
const LOCAL_NAMES = ['event', 'ping', 'data', 'notify', 'status', 'order', 'alert', 'sync', 'query', 'result'];
const TYPES = ['chat', 'normal', 'headline'];

/** mulberry32: a small seeded PRNG, so every run registers the same handlers and sends the same messages. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Selector shapes cycled through per account: (ln,ns,type) (ln,ns) (ns,type) (ns) (type) and a few others. */
const SHAPES: Array<[boolean, boolean, boolean]> = [
  [true, true, true],
  [true, true, false],
  [false, true, true],
  [false, true, false],
  [false, false, true],
  [true, false, true],
  [true, false, false],
];

/** Every bench tab belongs to one session. */
const SESSION = 'bench-session';
const at = (tabId: string) => ({ tabId, session: SESSION });

class CountingConnection implements TabConnection {
  readonly transport = 'websocket';
  readonly open = true;
  frames = 0;
  send(frames: readonly EventFrame[]): boolean {
    this.frames += frames.length;
    return true;
  }
  close(): void {}
}

const stanza = (from: string, to: string, type: string, ln: string | undefined, ns: string | undefined, n: number): string =>
  `<message xmlns="jabber:component:accept" from="${from}" to="${to}" type="${type}" id="m${n}">` +
  (ln && ns ? `<${ln} xmlns="${ns}" seq="${n}">payload ${n}</${ln}>` : `<body>hello ${n}</body>`) +
  '</message>';

function message(to: string, type: string, ln: string | undefined, ns: string | undefined, n: number): InboundMessage {
  const from = `sender${n % 97}@xmpp.bench.test/res`;
  return {
    from,
    to,
    type,
    id: `m${n}`,
    element: ln && ns ? { localName: ln, namespace: ns, attributes: { seq: String(n) }, text: `payload ${n}` } : { localName: 'body', namespace: 'jabber:client', attributes: {}, text: `hello ${n}` },
    xml: stanza(from, to, type, ln, ns, n),
    body: ln && ns ? undefined : `hello ${n}`,
  };
}

export const xmppRouter: Benchmark = {
  name: 'xmpp-router',
  description: `agent message routing in-process: MemoryHandlerRegistry.match with ${(ACCOUNTS * HANDLERS_PER_ACCOUNT).toLocaleString('en-US')} handlers, MessageRouter.route to a tab / to SQLite`,
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let store: Store | undefined;
      let hub: Hub | undefined;
      try {
        const idle = await waitForQuiet();
        const random = prng(20261122);
        const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

        // Handlers: 10 distinct selectors per account, shapes cycled, on the account's 2 tabs.
        const handlers = new MemoryHandlerRegistry();
        const registered: Array<{ account: number; selector: Selector }> = [];
        const shapeCount = new Map<number, number>();
        for (let a = 0; a < ACCOUNTS; a++) {
          const keys = new Set<string>();
          for (let h = 0, attempts = 0; h < HANDLERS_PER_ACCOUNT && attempts < 1_000; attempts++) {
            const [useLn, useNs, useType] = SHAPES[h % SHAPES.length]!;
            const selector: Selector = { localName: useLn ? pick(LOCAL_NAMES) : null, namespace: useNs ? pick(NAMESPACES) : null, type: useType ? pick(TYPES) : null };
            const key = JSON.stringify(selector);
            if (keys.has(key)) continue;
            keys.add(key);
            const tab = `acct${a}-tab${h % TABS_PER_ACCOUNT}`.padEnd(12, '0');
            expect((await handlers.register(`account-${a}`, at(tab), selector, `onBench${h}`)) === 'registered', 'handler registration refused');
            registered.push({ account: a, selector });
            shapeCount.set(specificity(selector), (shapeCount.get(specificity(selector)) ?? 0) + 1);
            h++;
          }
        }
        expect(handlers.size === ACCOUNTS * HANDLERS_PER_ACCOUNT, `${handlers.size} handlers registered, expected ${ACCOUNTS * HANDLERS_PER_ACCOUNT}`);

        // Messages for match(): random account, random fields from the same pools (some miss every handler).
        const matchPool = Array.from({ length: POOL }, (_, n) => {
          const a = Math.floor(random() * ACCOUNTS);
          const withElement = random() < 0.9;
          return { account: `account-${a}`, message: message(`user${a}@${DOMAIN}`, pick(TYPES), withElement ? pick(LOCAL_NAMES) : undefined, withElement ? pick(NAMESPACES) : undefined, n) };
        });
        let hits = 0;
        for (const m of matchPool) if ((await handlers.match(m.account, m.message)) !== undefined) hits++;

        // Messages for route(): ones built from a registered selector's fields (they reach a handler) and
        // ones to accounts without handlers (stored).
        const deliverPool = Array.from({ length: POOL }, (_, n) => {
          const { account, selector } = registered[Math.floor(random() * registered.length)]!;
          const ln = selector.localName ?? pick(LOCAL_NAMES);
          const ns = selector.namespace ?? pick(NAMESPACES);
          return message(`user${account}@${DOMAIN}`, selector.type ?? pick(TYPES), ln, ns, n);
        });
        const storePool = Array.from({ length: POOL }, (_, n) => message(`store${Math.floor(random() * STORAGE_ACCOUNTS)}@${DOMAIN}`, pick(TYPES), pick(LOCAL_NAMES), pick(NAMESPACES), n));

        store = await openSqliteStore(join(dir, 'xmpp-router.sqlite'));
        const now = Date.now();
        const insertAccount = async (id: string, userName: string): Promise<void> => {
          expect(await store!.accounts.insert({ id, userName, passwordHash: 'bench:not-a-hash', email: null, state: 'active', createdAt: now }), `account ${userName} not inserted`);
        };
        for (let a = 0; a < ACCOUNTS; a++) await insertAccount(`account-${a}`, `user${a}`);
        for (let a = 0; a < STORAGE_ACCOUNTS; a++) await insertAccount(`storage-${a}`, `store${a}`);

        const log = pino({ level: 'silent' });
        const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 600_000 });
        hub = new Hub({ broker, clock: systemClock, log, onFallback: () => undefined }, { node: 'bench', tabIdleMs: 600_000, longPollGapMs: 10_000, presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, maxTabsPerSession: 1_000_000 });
        const connections = new Map<string, CountingConnection>();
        for (let a = 0; a < ACCOUNTS; a++) {
          for (let t = 0; t < TABS_PER_ACCOUNT; t++) {
            const tab = `acct${a}-tab${t}`.padEnd(12, '0');
            const connection = new CountingConnection();
            connections.set(tab, connection);
            await hub.attach(at(tab), connection);
          }
        }
        const router = new MessageRouter({ accounts: store.accounts, handlers, delivery: hub, isConnected: (a) => hub!.isConnectedHere(a), messages: store.messages, clock: systemClock, log }, { componentDomain: DOMAIN, quota: 1_000_000 });
        const h = hub;
        const s = store;

        // Sanity: one of each path ends where it should.
        const framesNow = (): number => [...connections.values()].reduce((n, c) => n + c.frames, 0);
        expect((await router.route(deliverPool[0]!)) === 'delivered', 'a message matching a handler was not delivered');
        await new Promise((r) => setImmediate(r));
        expect(framesNow() === 1, `the tab got ${framesNow()} frames, expected 1`);
        expect((await router.route(storePool[0]!)) === 'stored', 'a message to an account without handlers was not stored');

        const outcomes = new Map<string, number>();
        let partDeliveries = 0;
        const route = (pool: InboundMessage[]) => async (i: number): Promise<void> => {
          const outcome = await router.route(pool[i % POOL]!);
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        };
        const specs: OperationSpec[] = [
          { key: 'match', label: 'MemoryHandlerRegistry.match(account, message)', unit: 'match', op: (i) => handlers.match(matchPool[i % POOL]!.account, matchPool[i % POOL]!.message), async: true },
          { key: 'route.delivered', label: "MessageRouter.route -> handler's tab (hub.deliver, MemoryBus)", unit: 'msg', op: route(deliverPool), async: true },
          { key: 'route.stored', label: 'MessageRouter.route -> stored (SQLite append)', unit: 'msg', op: route(storePool), async: true },
          { key: 'part.byUserName', label: '  part: accounts.byUserName (SQLite via Kysely)', unit: 'query', op: (i) => s.accounts.byUserName(`user${i % ACCOUNTS}`), async: true },
          {
            key: 'part.deliver',
            label: '  part: hub.deliver to a local tab (+ microtask)',
            unit: 'event',
            op: async (i) => {
              partDeliveries++;
              await h.deliver(at(`acct${i % ACCOUNTS}-tab0`.padEnd(12, '0')), { type: 'onBench', data: i });
            },
            async: true,
          },
        ];
        const framesBefore = framesNow();
        const measured = await measureInterleaved(specs, { ...TIMING, otherLimitPercent: OTHER_CPU_LIMIT });
        await new Promise((r) => setImmediate(r));
        const delivered = outcomes.get('delivered') ?? 0;
        const stored = outcomes.get('stored') ?? 0;
        const frames = framesNow() - framesBefore;
        expect(frames === delivered + partDeliveries, `the tabs got ${frames} frames for ${delivered} routed and ${partDeliveries} direct deliveries`);
        const unexpected = [...outcomes].filter(([k]) => k !== 'delivered' && k !== 'stored');
        expect(unexpected.length === 0, `unexpected route outcomes: ${JSON.stringify(unexpected)}`);

        const rows = measured.map((m) => [
          m.label,
          formatRate(m.rate),
          `${m.unit}/s`,
          formatMicros(1e6 / m.rate),
          `${(m.cpuPercent ?? 0).toFixed(0)}%`,
          `${(m.otherCpuPercent ?? 0).toFixed(0)}%${(m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT ? ' !' : ''}`,
        ]);
        const shapes = [...shapeCount].sort((a, b) => b[0] - a[0]).map(([score, n]) => `${['()', 'type', 'ns', 'ns+type', 'ln', 'ln+type', 'ln+ns', 'ln+ns+type'][score]} ${n}`).join(', ');
        const disturbed = measured.filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT);
        return {
          title: xmppRouter.description,
          context: [
            machineLine(),
            `tabwire: ${revision()}`,
            `libraries: better-sqlite3 ${versionOf('better-sqlite3')}, kysely ${versionOf('kysely')}`,
            `handlers: ${handlers.size.toLocaleString('en-US')} over ${ACCOUNTS.toLocaleString('en-US')} accounts (${HANDLERS_PER_ACCOUNT} each, on ${TABS_PER_ACCOUNT} tabs each); selector shapes: ${shapes}`,
            `match pool: ${POOL} messages, random account, 90% with a payload element from the same name/namespace pools; ${((hits / POOL) * 100).toFixed(0)}% of them match a handler`,
            `route: ${ACCOUNTS.toLocaleString('en-US')} accounts with handlers and ${STORAGE_ACCOUNTS.toLocaleString('en-US')} without in SQLite (temp dir); ${connections.size.toLocaleString('en-US')} tabs attached to a real Hub with counting connections`,
            `outcomes while measured: ${delivered.toLocaleString('en-US')} delivered, ${stored.toLocaleString('en-US')} stored; frames counted at the tabs: ${frames.toLocaleString('en-US')} (= routed + ${partDeliveries.toLocaleString('en-US')} direct hub.deliver)`,
            `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
            ...(disturbed.length > 0 ? [`WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core during ${disturbed.length} row(s) (marked !)`] : []),
          ],
          sections: [
            {
              heading: `One thread of this process: median of ${TIMING.rounds} interleaved ${TIMING.sliceMs} ms slices; async rows one call at a time`,
              lines: [
                ...table(['operation', 'rate', 'unit', 'µs/op', 'CPU', 'other'], rows),
                'No budget. The XMPP client -> Prosody -> tabwire component -> tab path is not measured here (see docs/benchmarks.md).',
              ],
            },
          ],
          measurements: measured as Measurement[],
          budgets: [],
        };
      } finally {
        hub?.close();
        await store?.close();
      }
    });
  },
};
