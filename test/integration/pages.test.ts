import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let publicService: TestService;

beforeAll(async () => {
  service = await startService();
  // A deployment whose public base is not loopback: development approval is off unless asked for.
  publicService = await startService({ publicBaseUrl: 'https://auth.example.org' });
});
afterAll(async () => {
  await service.close();
  await publicService.close();
});

describe('the demo and approval pages', () => {
  it('serves the demo page with a strict Content-Security-Policy', async () => {
    const page = await get(service, '/');
    expect(page.status).toBe(200);
    expect(page.contentType).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.body.toString()).toContain('<script src="/Events.js"></script>');
    expect((await get(service, '/demo.js')).contentType).toContain('text/javascript');
  });

  it('answers the signUrl with the approval page for browsers and JSON for signing apps', async () => {
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: '<img src=x onerror=alert(1)>', serviceId: '', tab: '' });
    const path = new URL(qr.body.signUrl).pathname;
    const html = await get(service, path, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(html.contentType).toContain('text/html');
    // The page carries nothing from the request; its script fetches the JSON and uses textContent.
    expect(html.body.toString()).not.toContain('onerror');
    const json = await get(service, path, { accept: 'application/json' });
    expect(json.body.purpose).toBe('<img src=x onerror=alert(1)>');
  });

  it('approves with the development identity on a loopback deployment; the tab gets the result', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const qr = await post(service, '/QuickLogin', { mode: 'image', purpose: 'Dev login', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    const path = new URL(qr.body.signUrl).pathname;
    const approved = await post(service, `${path}/Dev`, { decision: 'approve' }, { origin: service.baseUrl });
    expect(approved.body).toEqual({ state: 'approved' });
    const result = await tab.next('SignatureReceived');
    expect(result.data).toMatchObject({ Properties: { FIRST: 'Ada', LAST: 'Lovelace' }, Purpose: 'Dev login' });
    const again = await post(service, `${path}/Dev`, { decision: 'approve' });
    expect([again.status, again.body.code]).toEqual([409, 'code_already_used']);
    tab.close();
  });

  it('has no development approval on a public deployment', async () => {
    const qr = await post(publicService, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: '' });
    expect(qr.body.signUrl).toMatch(/^https:\/\/auth\.example\.org\/QuickLogin\/Sign\//);
    const path = new URL(qr.body.signUrl).pathname;
    const refused = await post(publicService, `${path}/Dev`, { decision: 'approve' });
    expect([refused.status, refused.body.code]).toEqual([404, 'not_found']);
  });

  it('names the development identity for the approval page, and only where development approval is on', async () => {
    const dev = await get(service, '/QuickLogin/DevIdentity');
    expect(dev.status).toBe(200);
    expect(dev.body).toEqual({ legalId: expect.any(String), properties: { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB', EMAIL: 'ada@example.org' } });
    expect(dev.body.legalId.length).toBeGreaterThan(0);
    const none = await get(publicService, '/QuickLogin/DevIdentity');
    expect([none.status, none.body.code]).toEqual([404, 'not_found']);
  });

  it('serves a favicon, linked from both pages, so browsers get no 404 for it', async () => {
    for (const path of ['/favicon.png', '/favicon.ico']) {
      const icon = await get(service, path);
      expect([icon.status, icon.contentType]).toEqual([200, 'image/png']);
      expect(icon.body.subarray(1, 4).toString()).toBe('PNG');
    }
    expect((await get(service, '/')).body.toString()).toContain('<link rel="icon" href="/favicon.png" type="image/png">');
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: '' });
    const approval = await get(service, new URL(qr.body.signUrl).pathname, { accept: 'text/html' });
    expect(approval.body.toString()).toContain('<link rel="icon" href="/favicon.png" type="image/png">');
  });
});
