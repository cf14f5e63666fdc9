import { chromium, type Browser } from 'playwright-core';

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
export async function launchChromium(): Promise<Browser> {
  return chromium.launch(LAUNCH);
}

/** The same Chromium as a process the test can kill (SIGKILL: no pagehide, no Unregister, no clean close). */
export async function launchKillableChromium(): Promise<{ browser: Browser; kill: () => Promise<void> }> {
  const server = await chromium.launchServer(LAUNCH);
  const browser = await chromium.connect(server.wsEndpoint());
  return { browser, kill: () => server.kill() };
}

