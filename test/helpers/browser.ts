import { chromium, type Browser } from 'playwright-core';

import { HOST_A, HOST_B } from './tls.js';

export { HOST_A, HOST_B, selfSignedCertificate } from './tls.js';

/** Debian's Chromium (installed by scripts/test), headless, with the flags this closed network needs. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
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
  });
}

