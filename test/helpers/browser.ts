import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startService, type TestService } from './service.js';
import { HOST_A, HOST_B } from './tls.js';

export { HOST_A, HOST_B, selfSignedCertificate } from './tls.js';

const LAUNCH = {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--host-resolver-rules=MAP ${HOST_A} 127.0.0.1, MAP ${HOST_B} 127.0.0.1`,
  ],
};

/** Debian's Chromium (installed by scripts/test), headless, with the flags this closed network needs. */
export async function launchChromium(o: { resolveToLoopback?: string[] } = {}): Promise<Browser> {
  if (!o.resolveToLoopback?.length) return chromium.launch(LAUNCH);
  // More names that resolve to this machine (e.g. a proxy's public name); the rules flag is given once.
  const names = [HOST_A, HOST_B, ...o.resolveToLoopback].map((name) => `MAP ${name} 127.0.0.1`).join(', ');
  return chromium.launch({ ...LAUNCH, args: [...LAUNCH.args.filter((a) => !a.startsWith('--host-resolver-rules=')), `--host-resolver-rules=${names}`] });
}

/** The same Chromium as a process the test can kill (SIGKILL: no pagehide, no Unregister, no clean close). */
export async function launchKillableChromium(): Promise<{ browser: Browser; kill: () => Promise<void> }> {
  const server = await chromium.launchServer(LAUNCH);
  const browser = await chromium.connect(server.wsEndpoint());
  return { browser, kill: () => server.kill() };
}

/**
 * A tabwire on loopback (startService with `overrides`) and Chromium, started before the calling file's tests
 * and closed after them (call it at the top level of the file); both are set once beforeAll has run.
 */
export function useServiceAndChromium(overrides: Partial<ConfigInput> = {}): { service: TestService; browser: Browser } {
  const rig = {} as { service: TestService; browser: Browser };
  beforeAll(async () => {
    rig.service = await startService(overrides);
    rig.browser = await launchChromium();
  });
  afterAll(async () => {
    await rig.browser?.close();
    await rig.service?.close();
  });
  return rig;
}

/**
 * The same Chromium as a process group the test can signal as a whole: SIGSTOP freezes the browser with its
 * network service (which answers WebSocket pings on a page's behalf), SIGKILL ends all of it at once.
 */
export async function launchSignallableChromium(): Promise<{ browser: Browser; signal: (signal: NodeJS.Signals) => void; kill: () => Promise<void> }> {
  const server = await chromium.launchServer(LAUNCH);
  const pid = server.process().pid!;
  const browser = await chromium.connect(server.wsEndpoint());
  // Playwright starts the browser as the leader of its own process group (renderers and utilities inherit it).
  return { browser, signal: (signal) => process.kill(-pid, signal), kill: () => server.kill() };
}
