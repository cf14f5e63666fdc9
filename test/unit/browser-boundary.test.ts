import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// docs/events.md: the browser script imports only protocol/ and never evaluates anything.
// scripts/build-browser.mjs enforces the imports when bundling; this guards them without a build.
const browserDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/browser');
const sources = readdirSync(browserDir)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => ({ file: f, text: readFileSync(path.join(browserDir, f), 'utf8') }));

/** Specifiers of `import x from '…'`, `export … from '…'` and bare `import '…'`. */
const specifiersOf = (text: string) =>
  [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b(?:[^'";]*?\bfrom)?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);

describe('src/browser', () => {
  it('has sources, and the import scan sees every kind of import', () => {
    expect(sources.length).toBeGreaterThan(5);
    const sample = "import a from './a.js';\nimport type { B } from '../protocol/b.js';\nimport '../errors.js';\nexport {\n  c,\n  type D,\n} from 'ws';\n";
    expect(specifiersOf(sample)).toEqual(['./a.js', '../protocol/b.js', '../errors.js', 'ws']);
  });

  it.each(sources.map((s) => [s.file, s.text]))('%s imports only ./ and ../protocol/', (_file, text) => {
    for (const s of specifiersOf(text)) expect(s).toMatch(/^(\.\/[a-z-]+|\.\.\/protocol\/[a-z-]+)\.js$/);
    expect(text).not.toMatch(/\bimport\s*\(/);
    expect(text).not.toMatch(/\brequire\s*\(/);
  });

  it.each(sources.map((s) => [s.file, s.text]))('%s has no eval, Function constructor or string timers', (_file, text) => {
    const code = text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
    expect(code).not.toMatch(/\beval\s*\(/);
    expect(code).not.toMatch(/\bnew\s+Function\b|\bFunction\s*\(/);
    expect(code).not.toMatch(/setTimeout\s*\(\s*['"`]/);
    expect(code).not.toMatch(/window\s*\[/);
  });
});
