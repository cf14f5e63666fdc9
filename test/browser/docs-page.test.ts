import { DEADLINE_MS } from '../helpers/until.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startService, type TestService } from '../helpers/service.js';

// The reference page at /docs (docs/openapi.md) in a real Chromium: it renders every operation of
// /openapi.json under its own strict Content-Security-Policy, and asks nothing of any other host.
let browser: Browser;
let service: TestService;
beforeAll(async () => {
  [browser, service] = await Promise.all([launchChromium(), startService()]);
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

it('/docs renders the operations with no CSP violation and no request to another origin', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const problems: string[] = [];
  const foreign: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol !== 'data:' && url.origin !== service.baseUrl) foreign.push(request.url());
  });
  await page.goto(`${service.baseUrl}/docs/`);
  // Swagger UI renders one .opblock per operation once it has loaded the document.
  await page.waitForSelector('.opblock', { timeout: DEADLINE_MS });
  const operations = await page.locator('.opblock').count();
  const documented = Object.values((await (await fetch(`${service.baseUrl}/openapi.json`)).json() as { paths: Record<string, object> }).paths).reduce(
    (n, item) => n + Object.keys(item).length,
    0,
  );
  expect(operations).toBe(documented);
  expect(problems.filter((p) => /Content Security Policy|Refused to/i.test(p))).toEqual([]);
  expect(problems).toEqual([]);
  expect(foreign).toEqual([]);
  await context.close();
});
