import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// docs/wallet.md: the wallet imports only its own folder, protocol/ and the QR decoder, evaluates no
// text, and never puts anything into the page as HTML. scripts/build-wallet.mjs enforces the imports
// when bundling; this guards all three without a build.
const walletDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/wallet');
const sources = readdirSync(walletDir)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => ({ file: f, code: readFileSync(path.join(walletDir, f), 'utf8').replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '') }));
const specifiersOf = (text: string) =>
  [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b(?:[^'";]*?\bfrom)?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);

describe('src/wallet', () => {
  it('has its sources', () => {
    expect(sources.map((s) => s.file)).toEqual(expect.arrayContaining(['main.ts', 'keys.ts', 'sw.ts', 'request.ts']));
  });

  it.each(sources.map((s) => [s.file, s.code]))('%s imports only ./, ../protocol/ and jsqr', (_file, code) => {
    for (const s of specifiersOf(code)) expect(s).toMatch(/^(\.\/[a-z-]+\.js|\.\.\/protocol\/[a-z-]+\.js|jsqr)$/);
    // The one dynamic import: the decoder's own file (docs/wallet.md "Scanning").
    expect(code.replace(/\bimport\('\.\/jsqr\.js'\)/g, '')).not.toMatch(/\bimport\s*\(|\brequire\s*\(/);
  });

  it.each(sources.map((s) => [s.file, s.code]))('%s has no eval, no Function constructor, no HTML sinks', (_file, code) => {
    expect(code).not.toMatch(/\beval\s*\(|\bnew\s+Function\b|\bFunction\s*\(|setTimeout\s*\(\s*['"`]/);
    expect(code).not.toMatch(/\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser/);
  });

  it('the key is made non-extractable, for signing only', () => {
    const keys = sources.find((s) => s.file === 'keys.ts')!.code;
    expect(keys).toContain("generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])");
  });
});
