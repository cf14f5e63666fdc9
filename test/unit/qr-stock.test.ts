import { setTimeout as sleep } from 'node:timers/promises';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { CODE_PATTERN, newCode } from '../../src/quicklogin/codes.js';
import type { EncodedMode } from '../../src/quicklogin/qr-answer.js';
import { QrStock, type ReadyAnswer } from '../../src/quicklogin/qr-stock.js';
import { decodePng, decodeText } from '../helpers/qr-decode.js';

const BASE = 'https://login.example.com';
let stocks: QrStock[] = [];
afterEach(async () => {
  await Promise.all(stocks.map((s) => s.close()));
  stocks = [];
});

/** A stock on a clock the test moves: `clock.ms` is its monotonic time. */
function stockAt(clock: { ms: number }, enabled = true): QrStock {
  const stock = new QrStock({ publicBaseUrl: BASE, modulePixels: 4, enabled, newCode: () => newCode(Date.now()), now: () => clock.ms });
  stocks.push(stock);
  return stock;
}

/**
 * Asks for answers as a loaded node would (200 requests in the same millisecond: 200 per second at
 * least, above the stock's threshold) until `count` come ready-made; yields between rounds so the
 * thread's deliveries arrive. Bounded by the test's timeout, not by a guess at the thread's speed.
 */
async function takeReady(stock: QrStock, mode: EncodedMode, count: number): Promise<ReadyAnswer[]> {
  const got: ReadyAnswer[] = [];
  while (got.length < count) {
    for (let i = 0; i < 200 && got.length < count; i++) {
      const ready = stock.take(mode);
      if (ready) got.push(ready);
    }
    await sleep(1);
  }
  return got;
}

const workerOf = (stock: QrStock): Worker => (stock as unknown as { worker: Worker }).worker;

describe('QrStock (answers made ahead on the encoder thread)', () => {
  it('hands out text answers made on the thread, each the QR of its own code, every code once', async () => {
    const stock = stockAt({ ms: 0 });
    const answers = await takeReady(stock, 'text', 300);
    expect(stock.threadRunning).toBe(true);
    expect(new Set(answers.map((a) => a.code)).size).toBe(300);
    answers.forEach(({ code, answer }) => {
      expect(code).toMatch(CODE_PATTERN);
      const json = JSON.parse(answer.toString('utf8')) as { signUrl: string; text: string };
      expect(Object.keys(json)).toEqual(['signUrl', 'text']);
      expect(json.signUrl).toBe(`${BASE}/QuickLogin/Sign/${code}`);
    });
    // Decoding is slow: a sample, first and last of the batch boundaries included.
    for (const { code, answer } of [answers[0]!, answers[7]!, answers[8]!, answers[150]!, answers[299]!]) {
      const { text } = JSON.parse(answer.toString('utf8')) as { text: string };
      expect(decodeText(text)).toBe(`${BASE}/QuickLogin/Sign/${code}`);
    }
  });

  it('hands out base64 answers whose PNG decodes to the signUrl of their code', async () => {
    const stock = stockAt({ ms: 0 });
    const answers = await takeReady(stock, 'base64', 40);
    for (const { code, answer } of [answers[0]!, answers[20]!, answers[39]!]) {
      const json = JSON.parse(answer.toString('utf8')) as Record<string, unknown>;
      expect(Object.keys(json)).toEqual(['signUrl', 'base64', 'contentType', 'width', 'height']);
      expect(json.contentType).toBe('image/png');
      expect(decodePng(Buffer.from(json.base64 as string, 'base64'))).toBe(`${BASE}/QuickLogin/Sign/${code}`);
    }
  });

  it('never hands out an answer older than a second, and never one code twice', async () => {
    const clock = { ms: 0 };
    const stock = stockAt(clock);
    const early = await takeReady(stock, 'text', 20);
    clock.ms = 1_001;
    // What was ready at 0 is too old now: the first request after the gap encodes its own code.
    expect(stock.take('text')).toBeUndefined();
    const late = await takeReady(stock, 'text', 20);
    const codes = [...early, ...late].map((a) => a.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('starts no thread below ~160 requests a second, nor when it is off', () => {
    const clock = { ms: 0 };
    const quiet = stockAt(clock);
    // 100 requests a second for three seconds.
    for (let i = 0; i < 300; i++, clock.ms += 10) expect(quiet.take('text')).toBeUndefined();
    expect(quiet.threadRunning).toBe(false);
    const off = stockAt({ ms: 0 }, false);
    for (let i = 0; i < 1_000; i++) expect(off.take('base64')).toBeUndefined();
    expect(off.threadRunning).toBe(false);
  });

  it('replaces a failed thread, and after three failures in a row lets requests encode for good', async () => {
    const stock = stockAt({ ms: 0 });
    await takeReady(stock, 'text', 10);
    for (let failure = 1; failure <= 3; failure++) {
      // Ask until an order is out (the thread may have been idle), then end the thread before it answers.
      while (!stock.threadRunning) stock.take('text');
      const exited = new Promise((resolve) => workerOf(stock).once('exit', resolve));
      await workerOf(stock).terminate();
      await exited;
      expect(stock.threadRunning).toBe(false);
      // Requests go on: whatever is still ready is handed out, then they encode their own codes.
      for (let i = 0; i < 1_000; i++) stock.take('text');
    }
    expect(stock.threadRunning).toBe(false);
    for (let i = 0; i < 1_000; i++) expect(stock.take('text')).toBeUndefined();
    expect(stock.threadRunning).toBe(false);
  });

  it('a delivered answer resets the failure count', async () => {
    const clock = { ms: 0 };
    const stock = stockAt(clock);
    for (let failure = 1; failure <= 4; failure++) {
      // Whatever an earlier thread made is too old now: these come from a thread started after the last failure.
      clock.ms += 1_001;
      await takeReady(stock, 'text', 10);
      while (!stock.threadRunning) stock.take('text');
      await workerOf(stock).terminate();
    }
    clock.ms += 1_001;
    // Four failures, each after a delivery: the stock still makes answers.
    expect((await takeReady(stock, 'text', 10)).length).toBe(10);
  });

  it('after close, hands out nothing and stops its thread', async () => {
    const stock = stockAt({ ms: 0 });
    await takeReady(stock, 'text', 10);
    await stock.close();
    expect(stock.threadRunning).toBe(false);
    for (let i = 0; i < 500; i++) expect(stock.take('text')).toBeUndefined();
    expect(stock.threadRunning).toBe(false);
  });
});
