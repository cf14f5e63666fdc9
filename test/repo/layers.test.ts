import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md "Layers": a module of src/ imports only from its own layer or lower ones, and no
 * import cycle forms, between folders or between files. The layer table is read from that page, so the
 * page and this check cannot drift apart. Redis is reached only from the units the page names.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = join(root, 'src');
/** Bundled for the page: they import only protocol/ (and themselves), and nothing imports them. */
const BUNDLES = ['browser', 'wallet'];

/** Folder (`hub`) or top-level file without `.ts` (`errors`) -> layer number, from the page's table. */
function readLayers(): Map<string, number> {
  const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = page.split(/^## Layers$/m)[1]?.split(/^## /m)[0] ?? '';
  const layers = new Map<string, number>();
  for (const row of section.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)) {
    for (const name of row[2]!.matchAll(/`([a-z-]+)(?:\/|\.ts)`/g)) layers.set(name[1]!, Number(row[1]));
  }
  return layers;
}

/** Every .ts file of src/ (declaration files too: they can import). */
function sourceFiles(dir = src): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The unit a layer is given to: the first folder under src/, or a top-level file's name without `.ts`. */
const unitOf = (file: string): string => relative(src, file).split(sep)[0]!.replace(/\.ts$/, '');

interface Import {
  from: string;
  to: string;
}

/** Relative imports of `text` (static, type-only, re-exports and `import()`), as the TypeScript compiler finds them. */
function importsOf(file: string, text: string): Import[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.filter((i) => i.fileName.startsWith('.'))
    .map((i) => ({ from: file, to: resolve(dirname(file), i.fileName).replace(/\.js$/, '.ts') }))
    .filter((i) => i.to.startsWith(src + sep));
}

/** The units the page lets reach Redis: the names in its "Only these reach Redis" sentence. */
function readRedisUnits(): string[] {
  const page = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = page.split(/^## Layers$/m)[1]?.split(/^## /m)[0] ?? '';
  const list = /^Only these reach Redis \([^)]*\): (.*)\.$/m.exec(section)?.[1] ?? '';
  return [...list.matchAll(/`([a-z-]+)(?:\/|\.ts)`/g)].map((m) => m[1]!);
}

/** Whether `text` reaches Redis: imports the `ioredis` package or a module of src/redis/. */
function reachesRedis(file: string, text: string): boolean {
  const named = ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName);
  if (named.some((n) => n === 'ioredis' || n.startsWith('ioredis/'))) return true;
  return importsOf(file, text).some((i) => unitOf(i.to) === 'redis');
}

const imports = sourceFiles().flatMap((f) => importsOf(f, readFileSync(f, 'utf8')));
const layers = readLayers();
const redisUnits = readRedisUnits();
const show = (i: Import) => `${relative(root, i.from)} -> ${relative(root, i.to)}`;

/** The strongly connected components of more than one node (Tarjan): each is a cycle. */
function cycles(edges: ReadonlyArray<readonly [string, string]>): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) next.set(a, [...(next.get(a) ?? []), b]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of next.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the layers of src/ (docs/architecture.md)', () => {
  it('the scan sees every kind of import, and the page places the folders it should', () => {
    const sample = "import a from './a.js';\nimport type { B } from '../b.js';\nexport { c } from './c.js';\nimport 'ws';\nconst m = await import('../d.js');\n";
    const at = join(src, 'hub', 'x.ts');
    expect(importsOf(at, sample).map((i) => relative(src, i.to))).toEqual(['hub/a.ts', 'b.ts', 'hub/c.ts', 'd.ts']);
    expect(imports.length).toBeGreaterThan(500);
    expect(imports.map(show)).toContain('src/store/sql/identity-store.ts -> src/store/stores.ts');
    expect(layers.get('protocol')).toBe(1);
    expect(layers.get('errors')).toBeLessThan(layers.get('hub')!);
    expect(layers.get('cli')).toBe(Math.max(...layers.values()));
    expect(cycles([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd']])).toEqual([['a', 'b', 'c']]);
  });

  it('every folder and top-level file of src/ has a layer (or is a bundle for the page)', () => {
    const units = [...new Set(sourceFiles().map(unitOf))];
    expect(units.filter((u) => !layers.has(u) && !BUNDLES.includes(u))).toEqual([]);
    expect([...layers.keys()].filter((u) => !units.includes(u))).toEqual([]);
  });

  it('no import runs up a layer', () => {
    const upward = imports.filter((i) => {
      const [from, to] = [unitOf(i.from), unitOf(i.to)];
      if (BUNDLES.includes(from) || BUNDLES.includes(to)) return false;
      return layers.get(to)! > layers.get(from)!;
    });
    expect(upward.map(show)).toEqual([]);
  });

  it('the page bundles import only protocol/ and themselves, and nothing imports them', () => {
    const crossing = imports.filter((i) => {
      const [from, to] = [unitOf(i.from), unitOf(i.to)];
      if (from === to) return false;
      return BUNDLES.includes(to) || (BUNDLES.includes(from) && to !== 'protocol');
    });
    expect(crossing.map(show)).toEqual([]);
  });

  it('only the units the page names reach Redis: no domain folder, transport or http/', () => {
    expect(reachesRedis(join(src, 'agent', 'x.ts'), "import { Redis } from 'ioredis';\n")).toBe(true);
    expect(reachesRedis(join(src, 'http', 'x.ts'), "import type { RedisConnection } from '../redis/connection.js';\n")).toBe(true);
    expect(reachesRedis(join(src, 'redis', 'x.ts'), "import { f } from './script.js';\n")).toBe(true);
    expect(reachesRedis(join(src, 'agent', 'x.ts'), "import { f } from './redis-like.js';\n")).toBe(false);
    expect(redisUnits).toEqual(expect.arrayContaining(['redis', 'broker', 'bus', 'lease', 'handlers', 'throttle', 'rate-limit']));
    for (const kept of ['agent', 'hub', 'quicklogin', 'identity', 'callbacks', 'channel', 'xmpp', 'http']) expect(redisUnits).not.toContain(kept);
    const reaching = sourceFiles().filter((f) => reachesRedis(f, readFileSync(f, 'utf8')));
    expect(reaching.filter((f) => !redisUnits.includes(unitOf(f))).map((f) => relative(root, f))).toEqual([]);
  });

  it('protocol/ imports nothing outside itself', () => {
    expect(imports.filter((i) => unitOf(i.from) === 'protocol' && unitOf(i.to) !== 'protocol').map(show)).toEqual([]);
  });

  it('no two folders import each other, directly or round about', () => {
    const folderEdges = imports.map((i) => [unitOf(i.from), unitOf(i.to)] as const).filter(([a, b]) => a !== b);
    expect(cycles(folderEdges)).toEqual([]);
  });

  it('no two files import each other, directly or round about', () => {
    expect(cycles(imports.map((i) => [relative(root, i.from), relative(root, i.to)] as const))).toEqual([]);
  });
});
