import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliverToTab, post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * Claims docs/protocol.md makes about status codes, headers and event order, checked against the service
 * (the text is read from the document where it lists names, so the two cannot drift apart).
 */

let service: TestService;
const protocol = readFileSync('docs/protocol.md', 'utf8');

beforeAll(async () => {
  service = await startService({ allowedOrigins: ['https://shop.example'] });
});
afterAll(async () => service?.close());

describe('docs/protocol.md', () => {
  it('"JSON": text/plain on a JSON route is 400 validation_failed, another content type 415, a broken body 400 malformed_json', async () => {
    const send = (type: string, body: string) => fetch(`${service.baseUrl}/QuickLogin`, { method: 'POST', headers: { 'content-type': type }, body });
    const answers = await Promise.all([send('text/plain', '{"mode":"text"}'), send('application/xml', '<a/>'), send('application/json', '{"mode":')]);
    const problems = await Promise.all(answers.map(async (a) => [a.status, a.headers.get('content-type')?.split(';')[0], ((await a.json()) as { code: string }).code]));
    expect(problems).toEqual([
      [400, 'application/problem+json', 'validation_failed'],
      [415, 'application/problem+json', 'unsupported_media_type'],
      [400, 'application/problem+json', 'malformed_json'],
    ]);
  });

  it('"Origins": a preflight allows exactly the request headers the document lists', async () => {
    const listed = /request headers ((?:`[A-Za-z-]+`,?\s*)+);/.exec(protocol)![1]!.match(/`[A-Za-z-]+`/g)!.map((h) => h.slice(1, -1));
    expect(listed).toContain('Tabwire-Binding');
    const preflight = await fetch(`${service.baseUrl}/QuickLogin`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': listed.join(', ').toLowerCase() },
    });
    expect(preflight.status).toBe(204);
    const allowed = preflight.headers.get('access-control-allow-headers')!.split(',').map((h) => h.trim().toLowerCase());
    expect(allowed.sort()).toEqual(listed.map((h) => h.toLowerCase()).sort());
  });

  it('"Frames from the service": after a Register the missed events come first, then CheckServerInstance', async () => {
    const first = await TestTab.open(service.wsUrl);
    await registered(service, first.tabId);
    await first.next('CheckServerInstance');
    first.close();
    await until(() => service.app.tabwire.hub.snapshot().connected === 0, 'the first socket to be gone');
    // Two events while no socket is open: they wait in the tab's stream.
    await deliverToTab(service, first.tabId, { type: 'Missed1', data: 1 });
    await deliverToTab(service, first.tabId, { type: 'Missed2', data: 2 });

    const ws = new WebSocket(service.wsUrl, 'ls', { headers: { cookie: first.cookie } });
    const types: string[] = [];
    ws.on('message', (m) => types.push((JSON.parse(m.toString()) as { type: string }).type));
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(JSON.stringify({ cmd: 'Register', tabId: first.tabId, location: 'http://127.0.0.1/page' }));
    await until(() => types.includes('CheckServerInstance'), 'the greeting');
    expect(types).toEqual(['Missed1', 'Missed2', 'CheckServerInstance']);
    ws.close();
    expect(protocol.replace(/\s+/g, ' ')).toContain('the events it missed, in order), then `{"type":"CheckServerInstance"');
    // The QR request of the same session still works on that tab: nothing above released it.
    expect((await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: first.tabId }, { cookie: first.cookie })).status).toBe(200);
  });
});
