import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

// docs/wallet.md "A wallet on another origin": the same files, with the service named in the page and its policy.
const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), 'tabwire-wallet-build-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('scripts/build-wallet.mjs', () => {
  it('--service names the service in the page and in connect-src, and nothing else', async () => {
    await run(process.execPath, ['scripts/build-wallet.mjs', '--out', out, '--service', 'https://auth.example.org/ignored/path']);
    for (const file of ['index.html', 'wallet.js', 'jsqr.js', 'sw.js', 'wallet.css', 'manifest.webmanifest', 'icon-192.png', 'icon-512.png']) {
      expect(existsSync(join(out, file)), file).toBe(true);
    }
    const html = readFileSync(join(out, 'index.html'), 'utf8');
    expect(html).toContain('<meta name="tabwire-service" content="https://auth.example.org">');
    expect(html).toContain("connect-src 'self' https://auth.example.org;");
    expect(html).not.toMatch(/script-src[^;]*(unsafe|https?:)/);
    // The worker's cache is named after this build's content.
    expect(readFileSync(join(out, 'sw.js'), 'utf8')).toMatch(/tabwire-wallet-[A-Za-z0-9_-]{12}/);
  });

  it('refuses a --service that is not an http(s) URL', async () => {
    await expect(run(process.execPath, ['scripts/build-wallet.mjs', '--out', out, '--service', 'javascript:alert(1)'])).rejects.toThrow();
  });
});
