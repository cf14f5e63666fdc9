#!/usr/bin/env node
// Regenerates docs/images/demo.png on purpose (`npm run docs:screenshot`, which builds first): starts the
// built service on a loopback port with a throw-away SQLite file, opens the demo page in headless Chromium,
// approves on the same device with the development identity, and photographs the page with the result.
// The browser test runs the same flow but writes its screenshot to the git-ignored tmp/, so running the
// suite never changes a tracked file.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'docs', 'images', 'demo.png');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForHealth(baseUrl, child) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error('the service did not start within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'tabwire-docs-'));
const port = await freePort();
const baseUrl = `http://127.0.0.1:${port}`;
const service = spawn(process.execPath, [path.join(root, 'dist', 'main.js')], {
  cwd: root,
  // Loopback, so same-device approval with the development identity is on (devApproval `auto`).
  env: { PATH: process.env.PATH, TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: path.join(dir, 'db.sqlite'), TABWIRE_LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'inherit', 'inherit'],
});
let browser;
try {
  await waitForHealth(baseUrl, service);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 900, height: 760 } });
  const page = await context.newPage();
  await page.goto(`${baseUrl}/`);
  await page.waitForFunction(() => document.getElementById('qr').src.includes('/QuickLogin/Qr/'));
  const [approval] = await Promise.all([context.waitForEvent('page'), page.click('#same-device')]);
  await approval.waitForSelector('#approve:not([disabled])');
  await approval.click('#approve');
  await approval.waitForFunction(() => document.getElementById('outcome').textContent.startsWith('Approved'));
  await page.waitForSelector('#result:not([hidden])');
  await page.screenshot({ path: out });
  console.log(`wrote ${path.relative(root, out)}`);
} finally {
  await browser?.close();
  service.kill('SIGTERM');
  await new Promise((resolve) => (service.exitCode !== null ? resolve() : service.once('exit', resolve)));
  rmSync(dir, { recursive: true, force: true });
}
