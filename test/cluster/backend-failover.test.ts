import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../helpers/cluster.js';
import { settleCode } from '../helpers/cluster-flows.js';
import { CallbackReceiver } from '../helpers/receiver.js';
import { TestTab } from '../helpers/tab.js';
import { selfSignedCertificate } from '../helpers/tls.js';
import { until } from '../helpers/until.js';

/**
 * Backend mode (docs/backend.md) across nodes: the node that accepted the signature is killed while the
 * backend still refuses the callback; another node claims the callback once its lease ran out and delivers
 * it, once, and the page on a third node hears SignatureReceivedBE.
 */
/**
 * Short, so the dead node's claim lapses soon, but not so short that a loaded machine fails a good attempt: an
 * attempt that times out is tried again (at least once, same webhook-id), which this test would count as a
 * second delivery. At 1 s a busy 2-core host did that (two POSTs after the kill).
 */
const TIMEOUT_MS = 4000;
let cluster: Cluster;
let receiver: CallbackReceiver;

beforeAll(async () => {
  const tls = selfSignedCertificate();
  receiver = await CallbackReceiver.start(tls);
  receiver.answers = [{ status: 500 }];
  cluster = await Cluster.start({
    nodes: 3,
    env: {
      TABWIRE_CALLBACK_CA_FILE: tls.certFile,
      TABWIRE_CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
      TABWIRE_CALLBACK_RETRY_BASE_MS: '100',
      TABWIRE_CALLBACK_RETRY_CAP_MS: '300',
      TABWIRE_CALLBACK_POLL_MS: '50',
      // A callback claimed by a node that died is free for another after timeout + 1 s.
      TABWIRE_CALLBACK_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  });
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await receiver?.close();
});

/** A counter's value in a node's /metrics (0 when the series is absent). */
async function metric(index: number, name: string): Promise<number> {
  const text = await (await fetch(`${cluster.url(index)}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && !line.startsWith('#'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

describe('backend mode across nodes', () => {
  it('the node that accepted the signature is killed before the callback succeeds: another delivers it exactly once and the tab on a third node hears of it', async () => {
    const tab = await TestTab.open(cluster.wsUrl(0));
    await tab.next('CheckServerInstance');
    const registration = await fetch(`${cluster.url(1)}/QuickLogin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ service: receiver.url, sessionId: 'failover-session' }),
    });
    expect(registration.status).toBe(200);
    const { serviceId } = (await registration.json()) as { serviceId: string };
    // QR request on node 2, the signature taken by node 3.
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(2), page: tab, purpose: 'Failover', decision: 'approve', serviceId });
    await receiver.waitFor(1);
    expect(await metric(2, 'tabwire_callback_attempts_total')).toBeGreaterThan(0);

    await cluster.kill(2);
    // From now on the backend accepts.
    const refused = receiver.received.length;
    receiver.answers = [...receiver.received.map(() => ({ status: 500 })), { status: 200 }];

    const event = await tab.next('SignatureReceivedBE', 30_000);
    expect(event.data).toBe('');
    await until(async () => (await metric(0, 'tabwire_callback_delivered_total')) + (await metric(1, 'tabwire_callback_delivered_total')) === 1, 'a node to count the delivery');
    // A second delivery could only come from another claim of the same callback, at the latest one lease
    // (timeout + 1 s) after the first: watch that long that none comes (an observation window, not a wait for anything).
    const watchUntil = Date.now() + TIMEOUT_MS + 1000 + 500;
    await until(() => Date.now() > watchUntil, 'the end of one lease');
    const accepted = receiver.received.slice(refused);
    expect(accepted.length).toBe(1);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(JSON.parse(accepted[0]!.body)).toMatchObject({ SessionId: 'failover-session', ServiceId: serviceId });
    expect(tab.events.filter((e) => e.type === 'SignatureReceivedBE')).toHaveLength(1);
    tab.close();
  }, 120_000);
});
