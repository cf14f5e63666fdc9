import { DEADLINE_MS } from '../helpers/until.js';
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { registered } from '../helpers/http.js';
import { decodePng } from '../helpers/qr-decode.js';
import {
  approveAt,
  closeColour,
  colourCounts,
  decodeShownQr,
  dominantColours,
  expectLoginThroughSlowHandshake,
  expectNoAlert,
  pageSettles,
  whyNotLoaded,
} from '../helpers/reference-checks.js';
import { referenceBrowser } from '../helpers/reference-browser.js';
import { recordDialogs, referencePageHtml, referenceState, routeReferencePage } from '../helpers/reference-page.js';
import { freePort, startService, type TestService } from '../helpers/service.js';

// Issue 10's acceptance, part 1, at the service origin (across hosts: reference-cross-host.test.ts;
// localhost/127.0.0.1: reference-loopback.test.ts; restarts and duplicate tabs: their own files): a page written
// for the reference deployments (test/browser/fixtures: the older event script and the QuickLogin page script,
// unchanged behaviour), and the demo page, in a real Chromium.
const newContext = referenceBrowser();

describe('page at the service origin, loopback deployment (behind a proxy that can slow WebSocket handshakes down)', () => {
  let service: TestService;
  let proxy: DelayProxy;
  /** The deployment's public origin: the proxy in front of the service, where the pages are. */
  let origin: string;

  beforeAll(async () => {
    const port = await freePort();
    proxy = await startDelayProxy({ targetPort: port });
    origin = `http://127.0.0.1:${proxy.port}`;
    service = await startService({ port, publicBaseUrl: origin });
  });
  afterAll(async () => {
    await proxy?.close();
    await service?.close();
  });

  const approve = (signUrl: string) => approveAt(service.baseUrl, signUrl);

  /** Opens the image-mode page with `suffix` appended to `src` by its QuickLogin script; returns the first image's outcome. */
  async function imageWithSuffix(path: string, suffix: string) {
    const context = await newContext([origin]);
    await routeReferencePage(context, origin, path, referencePageHtml({ quickLogin: { mode: 'image', purpose: 'Themed login' } }));
    const page = await context.newPage();
    const dialogs = recordDialogs(page);
    await page.goto(`${origin}${path}?suffix=${encodeURIComponent(suffix)}`);
    const state = await pageSettles(page, dialogs, (s) => s.images.some((i) => i.loaded !== null), 'the first QR image to load or fail');
    return { context, page, dialogs, state };
  }

  async function fetchPng(url: string): Promise<Buffer> {
    const response = await fetch(url);
    expect(response.status, url).toBe(200);
    expect(response.headers.get('content-type'), url).toBe('image/png');
    return Buffer.from(await response.arrayBuffer());
  }

  it('the "&fg=Theme&bg=Theme" suffix on src loads a PNG of the default colours that decodes to the signUrl', async () => {
    const { context, dialogs, state } = await imageWithSuffix('/theme.html', '&fg=Theme&bg=Theme');
    expectNoAlert(dialogs, 'alert');
    const index = state.images.findIndex((i) => i.loaded !== null);
    const image = state.images[index]!;
    expect(image.src.endsWith('&fg=Theme&bg=Theme')).toBe(true);
    expect(image.loaded, await whyNotLoaded(image.src)).toBe(true);
    const themed = await fetchPng(image.src);
    expect(decodePng(themed)).toBe(state.qr[index]!.signUrl);
    // Theme means the defaults: the same colours as the image without the suffix.
    const plain = await fetchPng(new URL(state.qr[index]!.src!, origin).href);
    expect([...colourCounts(themed).keys()].sort()).toEqual([...colourCounts(plain).keys()].sort());
    await context.close();
  });

  it('a colour pair appended to src ("&fg=%23003366&bg=%23ffffee") renders those colours', async () => {
    const { context, page, dialogs, state } = await imageWithSuffix('/colours.html', '&fg=%23003366&bg=%23ffffee');
    expectNoAlert(dialogs, 'alert');
    const index = state.images.findIndex((i) => i.loaded !== null);
    const image = state.images[index]!;
    expect(image.loaded, await whyNotLoaded(image.src)).toBe(true);
    const png = await fetchPng(image.src);
    expect([...colourCounts(png).keys()].sort()).toEqual(['003366', 'ffffee']);
    expect(decodePng(png)).toBe(state.qr[index]!.signUrl);
    // And Chromium draws them: the element's two dominant colours are the pair.
    const shown = await decodeShownQr(page, '#quickLoginCode img');
    const dominant = dominantColours(shown.png).sort();
    expect(dominant.length).toBe(2);
    expect(closeColour(dominant[0]!, '003366') && closeColour(dominant[1]!, 'ffffee'), `dominant colours ${dominant.join(', ')}`).toBe(true);
    await context.close();
  });

  it('a WebSocket handshake held back 1.5 s (a browser that has the session cookie, a new tab): the first QR request succeeds, no alert, signing delivers', async () => {
    const context = await newContext([origin]);
    await routeReferencePage(context, origin, '/visit.html', referencePageHtml());
    await routeReferencePage(context, origin, '/login.html', referencePageHtml({ quickLogin: { mode: 'text', purpose: 'Slow handshake login' } }));
    // An earlier visit left the session cookie (the handshake's Set-Cookie).
    const visit = await context.newPage();
    await visit.goto(`${origin}/visit.html`);
    await registered(service, (await referenceState(visit)).tabId);
    await visit.close({ runBeforeUnload: true });
    expect((await context.cookies(origin)).some((c) => c.name === 'tabwire_sid')).toBe(true);

    await expectLoginThroughSlowHandshake({ context, proxy, url: `${origin}/login.html`, approve, purpose: 'Slow handshake login' });
  });

  it('the demo page shows no error and no broken image in its first second, even with its WebSocket handshake held back (screenshot tmp/screenshots/demo-first-second.png)', async () => {
    const context = await newContext([origin]);
    // Records, from the first script on, every status text, every image that fails to load, and every
    // frame in which the QR image is rendered broken (no src yet, or a src that failed: Chromium draws
    // its broken-image icon with the alt text), until the first code has loaded.
    await context.addInitScript(() => {
      const w = window as any;
      const demo = (w.__demo = { statuses: [] as string[], imageErrors: [] as string[], brokenFrames: [] as Array<{ t: number; src: string | null }> });
      document.addEventListener(
        'error',
        (e) => {
          const target = e.target as HTMLElement | null;
          if (target?.tagName === 'IMG') demo.imageErrors.push((target as HTMLImageElement).src);
        },
        true,
      );
      const watch = () => {
        const status = document.getElementById('status');
        if (!status) return;
        demo.statuses.push(status.textContent ?? '');
        new MutationObserver(() => demo.statuses.push(status.textContent ?? '')).observe(status, { childList: true, characterData: true, subtree: true });
      };
      if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', watch);
      else watch();
      const sample = () => {
        const img = document.getElementById('qr') as HTMLImageElement | null;
        if (img) {
          const box = img.getBoundingClientRect();
          const rendered = box.width > 0 && box.height > 0 && img.offsetParent !== null && getComputedStyle(img).visibility !== 'hidden';
          if (rendered && (!img.getAttribute('src') || (img.complete && img.naturalWidth === 0))) {
            demo.brokenFrames.push({ t: Math.round(performance.now()), src: img.getAttribute('src') });
          }
          if (img.complete && img.naturalWidth > 0) return;
        }
        requestAnimationFrame(sample);
      };
      requestAnimationFrame(sample);
    });
    proxy.webSocketDelayMs = 1500;
    try {
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      // The page's own first second is over (its clock, not the test's).
      await page.waitForFunction(() => performance.now() >= 1000, undefined, { timeout: DEADLINE_MS });
      mkdirSync('tmp/screenshots', { recursive: true });
      await page.screenshot({ path: 'tmp/screenshots/demo-first-second.png' });
      const atOneSecond = await page.evaluate(() => {
        const img = document.getElementById('qr') as HTMLImageElement;
        return { status: document.getElementById('status')!.textContent, src: img.getAttribute('src'), complete: img.complete, naturalWidth: img.naturalWidth };
      });
      // Then until the first code is shown (or an error is), whatever the machine's speed.
      await page.waitForFunction(
        () => {
          const img = document.getElementById('qr') as HTMLImageElement;
          const demo = (window as any).__demo;
          return (img.complete && img.naturalWidth > 0) || demo.imageErrors.length > 0 || /could not/i.test(document.getElementById('status')!.textContent ?? '');
        },
        undefined,
        { timeout: DEADLINE_MS },
      );
      const demo = await page.evaluate(() => (window as any).__demo as { statuses: string[]; imageErrors: string[]; brokenFrames: unknown[] });
      const errors = demo.statuses.filter((s) => /could not|error|fail|not allowed|missing/i.test(s));
      expect(errors, `error texts shown: ${errors.join(' | ')}`).toEqual([]);
      expect(demo.imageErrors, 'images that failed to load').toEqual([]);
      expect(demo.brokenFrames.slice(0, 3), `frames with the QR image drawn broken (${demo.brokenFrames.length} in all; t = page ms)`).toEqual([]);
      // At one second: no error, and the image is either not set yet or loaded (never a broken one).
      expect(atOneSecond.status).not.toMatch(/could not|error/i);
      // (Still loading is fine; a src that failed is the broken image.)
      if (atOneSecond.src) expect(atOneSecond.complete && atOneSecond.naturalWidth === 0, `image at 1 s: ${JSON.stringify(atOneSecond)}`).toBe(false);
      expect(await page.evaluate(() => (document.getElementById('qr') as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);
    } finally {
      proxy.webSocketDelayMs = 0;
      await context.close();
    }
  });
});
