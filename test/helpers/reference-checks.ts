import type { Browser, BrowserContext, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { Agent, fetch as undiciFetch } from 'undici';
import { expect } from 'vitest';
import type { DelayProxy } from './delay-proxy.js';
import { decodePng } from './qr-decode.js';
import { recordDialogs, referenceState, type ReferenceState } from './reference-page.js';

// Waits and checks shared by the reference-page browser tests (test/browser/reference-*.test.ts).

/**
 * Polls a page's recorded state until `done` holds, or until an alert was shown (which ends the
 * wait early: the reference scripts alert on the errors these tests are about). The deadline only
 * bounds a broken run; it is not a claim about speed. Returns the last state seen.
 */
export async function pageSettles(
  page: Page,
  dialogs: readonly string[],
  done: (state: ReferenceState) => boolean,
  what: string,
  ms = 20_000,
): Promise<ReferenceState> {
  const deadline = Date.now() + ms;
  for (;;) {
    const state = await referenceState(page);
    if (done(state) || dialogs.length > 0) return state;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; page state: ${JSON.stringify(state.ref)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many pixels of each colour (`rrggbb`, fully opaque pixels only) a PNG has. */
export function colourCounts(png: Buffer): Map<string, number> {
  const image = PNG.sync.read(png);
  const counts = new Map<string, number>();
  for (let i = 0; i < image.data.length; i += 4) {
    if (image.data[i + 3] !== 255) continue;
    const hex = [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!].map((v) => v.toString(16).padStart(2, '0')).join('');
    counts.set(hex, (counts.get(hex) ?? 0) + 1);
  }
  return counts;
}

/** The `n` most frequent colours, most frequent first. */
export const dominantColours = (png: Buffer, n = 2): string[] =>
  [...colourCounts(png).entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([hex]) => hex);

/** Whether two `rrggbb` colours differ by at most `tolerance` per channel (screenshots may round). */
export function closeColour(a: string, b: string, tolerance = 3): boolean {
  for (let i = 0; i < 6; i += 2) if (Math.abs(parseInt(a.slice(i, i + 2), 16) - parseInt(b.slice(i, i + 2), 16)) > tolerance) return false;
  return true;
}

/** A fresh browser context (a first visit), allowed the loopback requests Chromium's Local Network Access gates. */
export async function freshContext(browser: Browser, origins: string[], options: { ignoreHTTPSErrors?: boolean } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ ignoreHTTPSErrors: options.ignoreHTTPSErrors ?? false, viewport: { width: 900, height: 760 } });
  for (const origin of origins) await context.grantPermissions(['local-network-access'], { origin }).catch(() => undefined);
  return context;
}

/** Fails with the alert texts in the message (the reference scripts alert the body of any non-200 answer). */
export function expectNoAlert(dialogs: readonly string[], what: string): void {
  expect(dialogs, `${what}: ${dialogs.join(' | ').slice(0, 400)}`).toEqual([]);
}

/**
 * A login on a slow network: opens `url` in a new page of `context` while `proxy` holds every WebSocket
 * handshake back 1.5 s, and expects the page's first QR request to succeed (its handshake through the proxy)
 * with no alert, and signing the latest code with `approve` to deliver SignatureReceived for `purpose`.
 * Closes the context; returns the page's state at its first QR answer.
 */
export async function expectLoginThroughSlowHandshake(o: {
  context: BrowserContext;
  proxy: DelayProxy;
  url: string;
  approve: (signUrl: string) => Promise<void>;
  purpose: string;
}): Promise<ReferenceState> {
  const page = await o.context.newPage();
  const dialogs = recordDialogs(page);
  o.proxy.webSocketDelayMs = 1500;
  const seen = o.proxy.webSocketsSeen;
  try {
    await page.goto(o.url);
    const state = await pageSettles(page, dialogs, (s) => s.qr.length > 0, 'the first QR answer');
    expect(o.proxy.webSocketsSeen, 'the handshake went through the slow proxy').toBeGreaterThan(seen);
    expectNoAlert(dialogs, 'the QuickLogin script alerted (and will never ask again)');
    await o.approve(state.qr.at(-1)!.signUrl);
    const after = await pageSettles(page, dialogs, (s) => s.signatures.length > 0, 'SignatureReceived');
    expect(after.signatures[0].Purpose).toBe(o.purpose);
    expectNoAlert(dialogs, 'alert');
    return state;
  } finally {
    o.proxy.webSocketDelayMs = 0;
    await o.context.close();
  }
}

/** What an image URL answers, for the message when the page's <img> did not load it. */
export async function whyNotLoaded(src: string, dispatcher?: Agent): Promise<string> {
  try {
    const response = await undiciFetch(src, dispatcher ? { dispatcher } : {});
    const body = Buffer.from(await response.arrayBuffer());
    const type = response.headers.get('content-type') ?? '';
    return `image ${src}: ${response.status} ${type} ${type.startsWith('image/') ? `${body.length} bytes` : body.toString('utf8').slice(0, 200)}`;
  } catch (err) {
    return `image ${src}: ${(err as Error).message}`;
  }
}

/** Approves a code with the service's development identity (the same-device route of a loopback or test deployment). */
export async function approveAt(baseUrl: string, signUrl: string, dispatcher?: Agent): Promise<void> {
  const response = await undiciFetch(`${baseUrl}${new URL(signUrl).pathname}/Dev`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"decision":"approve"}',
    ...(dispatcher ? { dispatcher } : {}),
  });
  expect(response.status, `approving ${signUrl}`).toBe(200);
}

/** Screenshots of the page's QR element until one decodes (the code is replaced every 2 s, an image may still be loading). */
export async function decodeShownQr(page: Page, selector: string): Promise<{ text: string; png: Buffer }> {
  let last: Error | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const png = await page.locator(selector).screenshot({ timeout: 5_000 });
      const text = decodePng(png);
      if (text !== null) return { text, png };
    } catch (err) {
      last = err as Error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`no screenshot of ${selector} decoded as a QR code${last ? ` (${last.message})` : ''}`);
}
