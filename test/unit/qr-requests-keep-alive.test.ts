import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock } from '../../src/clock.js';
import { CodeKeyRing } from '../../src/quicklogin/code-keys.js';
import { parseDerivedCode } from '../../src/quicklogin/derived-code.js';
import { QrRequests, ROW_SLACK_MS, type QrRequestParams } from '../../src/quicklogin/qr-requests.js';
import { until } from '../helpers/until.js';
import { BACKENDS, type Stores } from '../helpers/backends.js';

// QrRequests keeps a request's row alive past every code it issues (docs/signing.md "Derived codes"): a refresh
// writes nothing while the row has more than half its slack left, touches it in the background below that,
// and waits for the touch only when the row would expire before the new code.

const VALIDITY_MS = 300_000;
const params: QrRequestParams = {
  tabId: 'tab-keep-alive', sessionHash: 'h', origin: 'https://a.example', purpose: 'p', propertyFilter: null, attachmentFilter: null,
  serviceId: '', agentApiTimeout: null, scanSeconds: 2, validityMs: VALIDITY_MS,
};

describe('QrRequests keeps the request row alive past its codes (SQLite)', () => {
  let s: Stores;
  let requests: QrRequests;
  const clock = new ManualClock(1_700_000_000_000);
  const idOf = (code: string): number => parseDerivedCode(code, clock.now())!.requestId;
  const rowExpiry = async (id: number): Promise<number> => (await s.store.qrRequests.get(id))!.expiresAt;

  beforeEach(async () => {
    s = await BACKENDS.find((b) => b.name === 'sqlite')!.open();
    const keys = await CodeKeyRing.load(s.store.serverKeys, clock);
    requests = new QrRequests({ store: s.store.qrRequests, keys, log: pino({ level: 'silent' }) });
  });
  afterEach(async () => {
    await s.close();
  });

  it('no touch while more than half the slack is left; a background touch below that; an awaited one when the row would expire first', async () => {
    const start = clock.now();
    const id = idOf(await requests.issue(params, start));
    const stored = start + VALIDITY_MS + ROW_SLACK_MS;
    expect(await rowExpiry(id)).toBe(stored);

    // Just under half the slack gone: nothing written.
    clock.advance(ROW_SLACK_MS / 2 - 1);
    expect(idOf(await requests.issue(params, clock.now()))).toBe(id);
    expect(await rowExpiry(id)).toBe(stored);

    // Past half: the row is moved to the new code's expiry plus the slack, in the background.
    clock.advance(2);
    const touchedAt = clock.now();
    await requests.issue(params, touchedAt);
    await until(async () => (await rowExpiry(id)) === touchedAt + VALIDITY_MS + ROW_SLACK_MS, 'the background touch');

    // A page quiet for longer than the slack: its next code would outlive the row, so the touch is done before the code is answered.
    clock.advance(ROW_SLACK_MS + 1);
    const lateAt = clock.now();
    expect(idOf(await requests.issue(params, lateAt))).toBe(id);
    expect(await rowExpiry(id)).toBe(lateAt + VALIDITY_MS + ROW_SLACK_MS);
  });
});
