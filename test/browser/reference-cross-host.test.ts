import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_A, HOST_B, selfSignedCertificate } from '../helpers/browser.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { registered } from '../helpers/http.js';
import { approveAt, decodeShownQr, expectLoginThroughSlowHandshake, expectNoAlert, pageSettles, whyNotLoaded } from '../helpers/reference-checks.js';
import { referenceBrowser } from '../helpers/reference-browser.js';
import { recordDialogs, referencePageHtml, referenceState, startPageServer, type PageServer } from '../helpers/reference-page.js';
import { freePort, startService, type TestService } from '../helpers/service.js';

// Issue 10's acceptance, part 1, across hosts (the page at the service origin: reference-service-origin.test.ts;
// localhost/127.0.0.1: reference-loopback.test.ts; restarts and duplicate tabs: their own files): a page written
// for the reference deployments (test/browser/fixtures: the older event script and the QuickLogin page script,
// unchanged behaviour) in a real Chromium.
const newContext = referenceBrowser();

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('page on host A, tabwire on host B (the reference documentation set-up: NEURON meta, image mode, cookie-less switch)', () => {
  const tls = selfSignedCertificate();
  const agent = new Agent({ connect: { ca: tls.cert } });
  const THIRD_ALLOWED = 'https://third-allowed.test:4443';
  let tabwireB: TestService;
  let pages: PageServer;
  let proxyB: DelayProxy;

  beforeAll(async () => {
    pages = await startPageServer({ hostName: HOST_A, tls });
    const portB = await freePort();
    tabwireB = await startService({
      port: portB,
      tlsCertFile: tls.certFile,
      tlsKeyFile: tls.keyFile,
      publicBaseUrl: `https://${HOST_B}:${portB}`,
      allowedOrigins: [pages.origin, THIRD_ALLOWED],
      allowCookielessQrRequests: true,
      devApproval: 'on',
    });
    // The same service behind a proxy that can slow its WebSocket handshakes down (host B, another port).
    proxyB = await startDelayProxy({ targetPort: portB, tls });
  });
  afterAll(async () => {
    await proxyB?.close();
    await pages?.close();
    await tabwireB?.close();
    await agent.close();
  });

  const postB = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    undiciFetch(`${tabwireB.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      dispatcher: agent,
    });
  const approveB = (signUrl: string) => approveAt(tabwireB.baseUrl, signUrl, agent);

  it('image mode: the image loads from the service public base and decodes to the signUrl; signing delivers SignatureReceived; no alert', async () => {
    pages.set('/image.html', referencePageHtml({ neuron: `${HOST_B}:${new URL(tabwireB.baseUrl).port}`, quickLogin: { mode: 'image', purpose: 'Cross-host login' } }));
    const context = await newContext([pages.origin], { ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const dialogs = recordDialogs(page);
    await page.goto(`${pages.origin}/image.html`);

    const state = await pageSettles(page, dialogs, (s) => s.images.some((i) => i.loaded !== null), 'the first QR image to load or fail');
    expectNoAlert(dialogs, 'the QuickLogin script alerted');
    // The script puts `src` into <img src> as given: only an absolute URL on the service loads.
    expect(state.qr[0]!.src).toMatch(new RegExp(`^${escapeRegExp(tabwireB.publicBaseUrl)}/`));
    const first = state.images.find((i) => i.loaded !== null)!;
    expect(first.loaded, await whyNotLoaded(first.src, agent)).toBe(true);
    expect(first.naturalWidth).toBeGreaterThan(0);

    const shown = await decodeShownQr(page, '#quickLoginCode img');
    const signUrls = (await referenceState(page)).qr.map((q) => q.signUrl);
    expect(signUrls).toContain(shown.text);
    expect(shown.text).toMatch(new RegExp(`^https://${escapeRegExp(HOST_B)}:\\d+/QuickLogin/Sign/`));
    // The link around the image is the signUrl the image encodes.
    expect(await page.locator('#quickLoginCode a').getAttribute('href')).toMatch(/\/QuickLogin\/Sign\//);

    await approveB(shown.text);
    const after = await pageSettles(page, dialogs, (s) => s.signatures.length > 0, 'SignatureReceived');
    expect(after.signatures[0].Purpose).toBe('Cross-host login');
    expectNoAlert(dialogs, 'alert');
    await context.close();
  });

  it('with the cookie-less switch, a QR request for that tab from any origin but the one it registered from is refused', async () => {
    pages.set('/events.html', referencePageHtml({ neuron: `${HOST_B}:${new URL(tabwireB.baseUrl).port}` }));
    const context = await newContext([pages.origin], { ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(`${pages.origin}/events.html`);
    const tabId = (await referenceState(page)).tabId;
    await registered(tabwireB, tabId);

    const ask = (headers: Record<string, string>) => postB('/QuickLogin', { serviceId: '', tab: tabId, mode: 'text', purpose: 'Probe' }, headers);
    // Control: the tab's own origin, without a cookie (as the reference script sends it), is accepted.
    const own = await ask({ origin: pages.origin });
    expect(own.status).toBe(200);

    for (const headers of [{ origin: THIRD_ALLOWED }, { origin: 'https://evil.test' }, {}] as Record<string, string>[]) {
      const refused = await ask(headers);
      const body = (await refused.json()) as Record<string, unknown>;
      const what = `a cookie-less QR request from ${headers.origin ?? 'no Origin'}: ${refused.status} ${JSON.stringify(body).slice(0, 120)}`;
      expect(refused.status >= 400 && refused.status < 500, what).toBe(true);
      expect(body.signUrl, what).toBeUndefined();
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
    }
    await context.close();
  });

  it('a WebSocket handshake held back 1.5 s: the first QR request (500 ms after load) succeeds, no alert fires, signing delivers the result', async () => {
    pages.set('/slow.html', referencePageHtml({ neuron: `${HOST_B}:${proxyB.port}`, quickLogin: { mode: 'text', purpose: 'Slow network login' } }));
    const context = await newContext([pages.origin], { ignoreHTTPSErrors: true });
    const first = await expectLoginThroughSlowHandshake({ context, proxy: proxyB, url: `${pages.origin}/slow.html`, approve: approveB, purpose: 'Slow network login' });
    expect(first.qr[0]!.signUrl).toMatch(/\/QuickLogin\/Sign\//);
  });
});
