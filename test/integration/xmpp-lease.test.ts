import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import xml from '@xmpp/xml';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { InboundMessage } from '../../src/protocol/xmpp-message.js';
import { XmppOfflineError } from '../../src/agent/messaging.js';
import { RedisBus } from '../../src/bus/redis-bus.js';
import type { Lease } from '../../src/lease/lease.js';
import { RedisLease } from '../../src/lease/redis-lease.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { XmppComponent } from '../../src/xmpp/component.js';
import { LeasedXmppComponent, XMPP_LEASE_TTL_MS } from '../../src/xmpp/leased-component.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { testConnection, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

const silent = pino({ level: 'silent' });
/** The bound for a take-over after the holder died. */
const FAIL_OVER_MS = 10_000;

let prosody: ProsodyServer;
let alice: TestXmppClient;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  prosody = await startProsody();
  await prosody.register('alice', 'alice-password');
  alice = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'alice', password: 'alice-password' });
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await alice?.stop();
  await prosody?.stop();
});

interface Node {
  id: string;
  xmpp: LeasedXmppComponent;
  received: InboundMessage[];
  /** Acquire attempts made by this node's runner. */
  attempts: () => number;
}

/** A cluster node's XMPP part in this process: its own Redis connection, bus, lease and component. */
async function node(id: string, prefix: string): Promise<Node> {
  const redis: RedisConnection = testConnection(inject('redisUrl'), prefix);
  const bus = await RedisBus.open(redis, id, silent);
  const received: InboundMessage[] = [];
  const component = new XmppComponent({
    service: prosody.componentService,
    domain: prosody.componentDomain,
    password: prosody.componentSecret,
    log: silent,
    onMessage: async (message) => void received.push(message),
  });
  const lease = new RedisLease(redis, 'xmpp-component', id, XMPP_LEASE_TTL_MS);
  let attempts = 0;
  const counted: Lease = {
    name: lease.name,
    holder: lease.holder,
    ttlMs: lease.ttlMs,
    scope: lease.scope,
    acquire: () => (attempts++, lease.acquire()),
    renew: (token) => lease.renew(token),
    release: (token) => lease.release(token),
    current: () => lease.current(),
  };
  const xmpp = new LeasedXmppComponent({ component, lease: counted, bus, nodeId: id, log: silent });
  cleanups.push(async () => {
    await xmpp.stop();
    await bus.close();
    await redis.close();
  });
  return { id, xmpp, received, attempts: () => attempts };
}

const agentJid = () => `agent@${prosody.componentDomain}`;
const fromAlice = (id: string) => alice.send(xml('message', { to: agentJid(), type: 'chat', id }, xml('body', {}, id)));
const toAlice = (id: string) => ({ from: agentJid(), to: alice.bareJid, type: 'chat', id, children: [{ kind: 'text' as const, name: 'body' as const, text: id }] });

describe('one XMPP component connection per cluster (lease in Redis, real Prosody)', () => {
  it('only the holder connects; a standby sends through it over the bus; a graceful stop hands over at once', async () => {
    const prefix = testPrefix('xmpp-lease');
    const [b, c] = [await node('node-b', prefix), await node('node-c', prefix)];
    // Nobody holds the lease yet: a send fails as it does on one node whose component is down.
    await expect(c.xmpp.send(toAlice('early'))).rejects.toBeInstanceOf(XmppOfflineError);

    b.xmpp.start();
    c.xmpp.start();
    await until(() => b.xmpp.online || c.xmpp.online, 'one node to connect');
    const [holder, standby] = b.xmpp.online ? [b, c] : [c, b];
    await until(() => standby.attempts() >= 2, 'the standby to try the lease again');
    expect(standby.xmpp.state).toBe('standby');
    expect(holder.xmpp.state).toBe('online');

    await fromAlice('in-1');
    await until(() => holder.received.some((m) => m.id === 'in-1'), 'the stanza on the holder');
    expect(standby.received).toEqual([]);

    await standby.xmpp.send(toAlice('out-1'));
    expect((await alice.nextMessage((m) => m.attrs.id === 'out-1')).getChildText('body')).toBe('out-1');

    await holder.xmpp.stop();
    await until(() => standby.xmpp.online, 'the standby to take over', FAIL_OVER_MS);
    await fromAlice('in-2');
    await until(() => standby.received.some((m) => m.id === 'in-2'), 'the stanza on the new holder');
    // The next test's nodes use the same component domain on the same Prosody.
    await standby.xmpp.stop();
  });

  it('the holder is killed (SIGKILL): another node connects within 10 s and routing works again', async () => {
    const prefix = testPrefix('xmpp-kill');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/xmpp-lease-node.ts'], {
      env: {
        PATH: process.env.PATH,
        REDIS_URL: inject('redisUrl'),
        REDIS_PREFIX: prefix,
        XMPP_SERVICE: prosody.componentService,
        XMPP_DOMAIN: prosody.componentDomain,
        XMPP_SECRET: prosody.componentSecret,
        NODE_ID: 'node-a',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    cleanups.push(() => kill(child));
    const events: { event: string; id?: string }[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => events.push(JSON.parse(line) as { event: string; id?: string }));
    await until(() => events.some((e) => e.event === 'online'), 'the child node to connect', 20_000);

    const b = await node('node-b', prefix);
    b.xmpp.start();
    await until(() => b.attempts() >= 2, 'node B to try the lease');
    expect(b.xmpp.state).toBe('standby');
    await fromAlice('to-a');
    await until(() => events.some((e) => e.event === 'message' && e.id === 'to-a'), 'the stanza on the child');
    // Sent from B, through A.
    await b.xmpp.send(toAlice('via-a'));
    await alice.nextMessage((m) => m.attrs.id === 'via-a');

    const killedAt = Date.now();
    await kill(child);
    await until(() => b.xmpp.online, 'node B to take over', FAIL_OVER_MS);
    expect(Date.now() - killedAt).toBeLessThan(FAIL_OVER_MS);
    await fromAlice('to-b');
    await until(() => b.received.some((m) => m.id === 'to-b'), 'the stanza on node B');
    await b.xmpp.send(toAlice('from-b'));
    await alice.nextMessage((m) => m.attrs.id === 'from-b');
  });
});

function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
