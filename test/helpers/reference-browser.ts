import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { launchChromium } from './browser.js';
import { freshContext } from './reference-checks.js';

// The browser shared by the tests of one reference-page file (test/browser/reference-cross-host.test.ts,
// test/browser/reference-service-origin.test.ts).

/**
 * Launches Chromium before the calling file's tests and closes it after them (call it at the top level of
 * the file); returns a maker of fresh contexts (first visits) in that browser.
 */
export function referenceBrowser(): (origins: string[], options?: { ignoreHTTPSErrors?: boolean }) => Promise<BrowserContext> {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return (origins, options = {}) => freshContext(browser, origins, options);
}
