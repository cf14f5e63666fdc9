/**
 * Load-generator child for the long-poll benchmark: many tabs polling `POST /ClientEvents`
 * (text/plain body, X-TabID, session cookie), each over its own keep-alive connection (one
 * node:http Agent per tab, as each browser tab would hold its own).
 * Driven over IPC by bench/lib/processes/channel-worker.ts. Loopback only.
 *
 * Commands:
 *   first  {port, prefix, count, concurrency}: each tab's first poll, answered at once with the
 *          session cookie (Set-Cookie tabwire_sid) and `CheckServerInstance`; the cookie is kept per tab
 *   hold   {}: every tab's next poll, sent without waiting for answers (the server holds them)
 *   status {}: how many held polls were sent and answered, and with what
 *   close-all
 */
import { Agent, request } from 'node:http';
import { tabIdOf } from '../lib/load/channel-ids.js';
import { serveWorker } from '../lib/processes/channel-worker.js';

const agents: Agent[] = [];
let port = 0;
const cookies: string[] = [];
const tabIds: string[] = [];
const held = { sent: 0, answered: 0, withEvent: 0, nop: 0, otherStatus: 0, errors: 0, firstError: undefined as string | undefined, firstOther: undefined as string | undefined };

/**
 * A tab's first poll is answered at once with nothing for it yet but `CheckServerInstance` (a tab new to the
 * service is told the instance id, docs/events.md "Long-poll `/ClientEvents`"); an empty list is accepted too.
 */
function firstPollEvents(body: string): boolean {
  try {
    const events = JSON.parse(body) as unknown;
    return Array.isArray(events) && events.every((e) => (e as { type?: unknown }).type === 'CheckServerInstance');
  } catch {
    return false;
  }
}

function poll(agent: Agent, tabId: string, cookie: string | undefined): Promise<{ status: number; body: string; setCookie: string | undefined }> {
  return new Promise((resolve, reject) => {
    const body = 'http://127.0.0.1/bench';
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/ClientEvents',
        agent,
        headers: {
          'content-type': 'text/plain',
          'content-length': Buffer.byteLength(body),
          'x-tabid': tabId,
          ...(cookie === undefined ? {} : { cookie }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, setCookie: res.headers['set-cookie']?.[0] }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

serveWorker(
  {
    async first(a: { port: number; prefix: string; count: number; concurrency: number }) {
      port = a.port;
      const started = performance.now();
      let next = 0;
      let ok = 0;
      let failed = 0;
      let firstError: string | undefined;
      const lane = async (): Promise<void> => {
        while (next < a.count) {
          const i = next++;
          const tabId = tabIdOf(a.prefix, i);
          try {
            const agent = new Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1 });
            agents[i] = agent;
            const answer = await poll(agent, tabId, undefined);
            const cookie = answer.setCookie?.split(';')[0];
            if (answer.status !== 200 || !firstPollEvents(answer.body) || !cookie?.startsWith('tabwire_sid=')) {
              throw new Error(`first poll answered ${answer.status} ${answer.body.slice(0, 100)} cookie ${String(cookie)}`);
            }
            tabIds[i] = tabId;
            cookies[i] = cookie;
            ok++;
          } catch (err) {
            failed++;
            firstError ??= (err as Error).message;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, a.concurrency) }, lane));
      const sockets = agents.reduce((n, agent) => n + Object.values(agent.freeSockets).reduce((m, list) => m + (list?.length ?? 0), 0), 0);
      return { ok, failed, firstError, ms: performance.now() - started, sockets };
    },
    hold() {
      for (let i = 0; i < tabIds.length; i++) {
        const tabId = tabIds[i];
        const cookie = cookies[i];
        const agent = agents[i];
        if (tabId === undefined || cookie === undefined || agent === undefined) continue;
        held.sent++;
        poll(agent, tabId, cookie).then(
          (answer) => {
            held.answered++;
            if (answer.status !== 200) {
              held.otherStatus++;
              held.firstOther ??= `${answer.status} ${answer.body.slice(0, 200)}`;
            } else if (answer.body.includes('"BenchRelease"')) held.withEvent++;
            else if (answer.body.includes('"NOP"')) held.nop++;
            else {
              held.otherStatus++;
              held.firstOther ??= `200 ${answer.body.slice(0, 200)}`;
            }
          },
          (err: unknown) => {
            held.errors++;
            held.firstError ??= (err as Error).message;
          },
        );
      }
      return { sent: held.sent };
    },
    status() {
      return { ...held };
    },
    'close-all'() {
      for (const agent of agents) agent.destroy();
      return true;
    },
  },
  () => {
    for (const agent of agents) agent.destroy();
  },
);
