import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { kill, startProcess } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';
import { until } from '../helpers/until.js';

// docs/deployment.md "Stopping a node": with shutdownDrainSeconds the built program, asked to stop, first
// answers /readyz 503 while serving everything else; a second signal ends the drain at once. The drain is
// set far longer than the test, so nothing here depends on how long a second is on this machine.
describe('draining before shutdown (shutdownDrainSeconds)', () => {
  it('SIGTERM: /readyz 503 shutting_down, a WebSocket stays open and QR requests are served; a second SIGTERM stops the node (socket failed, exit 0)', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-drain-'));
    const child = await startProcess({ TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'), TABWIRE_LOG_LEVEL: 'warn', TABWIRE_SHUTDOWN_DRAIN_SECONDS: '300' }, base);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ClientEventsWS`, 'ls');
      let cookie = '';
      ws.on('upgrade', (res) => (cookie = res.headers['set-cookie']![0]!.split(';')[0]!));
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
      const tab = 'drain-tab-0001';
      ws.send(JSON.stringify({ cmd: 'Register', tabId: tab, location: `${base}/` }));

      child.kill('SIGTERM');
      let ready!: Response;
      await until(async () => (ready = await fetch(`${base}/readyz`)).status === 503, '/readyz to answer 503 after SIGTERM');
      expect(ready.headers.get('content-type')).toContain('application/problem+json');
      expect(ready.headers.get('retry-after')).toBe('1');
      expect(((await ready.json()) as { code: string }).code).toBe('shutting_down');

      // Still serving: liveness, a QR request for the connected tab, the open socket.
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const qr = await fetch(`${base}/QuickLogin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, origin: base },
        body: JSON.stringify({ mode: 'text', purpose: 'During the drain', serviceId: '', tab }),
      });
      expect(qr.status).toBe(200);
      expect(ws.readyState).toBe(WebSocket.OPEN);

      child.kill('SIGTERM');
      // Failed, not closed cleanly: both generations of the event script reconnect then (docs/events.md "Restarts").
      expect(await closed).toBe(1006);
      expect(await exited).toBe(0);
    } finally {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
