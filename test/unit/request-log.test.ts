import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { redactUrl } from '../../src/http/request-log.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/stores.js';

const CODE = 'Zq3x9KpLmN0aBcDeFgHiJk';

describe('request logs carry no whole login code (sign and QR image URLs were logged in full)', () => {
  const lines: string[] = [];
  let app: FastifyInstance;
  let store: Store;

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().split('\n').filter((l) => l !== ''));
        done();
      },
    });
    store = await openSqliteStore(':memory:');
    app = await buildApp(loadConfig({}, { logLevel: 'info', sqliteFile: ':memory:', devApproval: 'off' }), { store, clock: new ManualClock(), logStream: stream });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('logs sign, QR image, attachment and dev-approval URLs with only the first 6 characters of the code', async () => {
    const paths = [
      `/QuickLogin/Sign/${CODE}`,
      `/QuickLogin/Qr/${CODE}.png`,
      `/QuickLogin/Attachment/${CODE}/0b5f8d2e-attachment`,
      `/quicklogin/sign/${CODE}?x=1`,
    ];
    for (const url of paths) await app.inject({ method: 'GET', url });
    await app.inject({ method: 'POST', url: `/QuickLogin/Sign/${CODE}/Dev`, payload: { decision: 'approve' } });
    const requestLines = lines.map((l) => JSON.parse(l) as { req?: { url: string } }).filter((l) => l.req !== undefined);
    expect(requestLines.length).toBeGreaterThanOrEqual(5);
    expect(lines.join('\n')).not.toContain(CODE.slice(0, 7));
    expect(requestLines.map((l) => l.req!.url)).toEqual([
      `/QuickLogin/Sign/${CODE.slice(0, 6)}…`,
      `/QuickLogin/Qr/${CODE.slice(0, 6)}…`,
      `/QuickLogin/Attachment/${CODE.slice(0, 6)}…/0b5f8d2e-attachment`,
      `/quicklogin/sign/${CODE.slice(0, 6)}…?x=1`,
      `/QuickLogin/Sign/${CODE.slice(0, 6)}…/Dev`,
    ]);
  });

  it('cuts a code followed by the appended colour suffix or a query too', () => {
    expect(redactUrl(`/QuickLogin/Qr/${CODE}.png&fg=Theme&bg=Theme`)).toBe(`/QuickLogin/Qr/${CODE.slice(0, 6)}…`);
    expect(redactUrl(`/QuickLogin/Qr/${CODE}.png?fg=navy`)).toBe(`/QuickLogin/Qr/${CODE.slice(0, 6)}…?fg=navy`);
  });

  it('leaves other URLs as they are', () => {
    expect(redactUrl('/ClientEvents')).toBe('/ClientEvents');
    expect(redactUrl('/QuickLogin')).toBe('/QuickLogin');
    expect(redactUrl('/QuickLogin/Sign/abc')).toBe('/QuickLogin/Sign/abc');
    expect(redactUrl('/Agent/Legal/GetIdentity?id=x')).toBe('/Agent/Legal/GetIdentity?id=x');
  });
});
