import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signOnThreadPool } from '../../src/callbacks/batch-signer.js';
import { webhookSignatureHeader } from '../../src/callbacks/webhook-signature.js';
import { rawPublicKey } from '../../src/identity/keys.js';
import { blocksRunBy } from '../docs/doc-blocks.js';
import { terminate } from '../helpers/child.js';
import { until } from '../helpers/until.js';

/**
 * The SDK packages as docs/sdk.md tells a team to install them: `npm pack -w packages/client -w
 * packages/backend` in a checkout without builds (each package's `prepare` builds it from the service's
 * sources), each tarball installed alone in an empty project, the budget measured (packages installed,
 * seconds, no install script, no native build), and the docs' own examples run there: the backend
 * example verifies a signed callback and refuses a tampered one; the page example bundles with esbuild
 * into a script that imports nothing at run time. Then `@tabwire/client` from git, as docs/sdk.md says
 * (`#<commit>::path:packages/client`). Everything under os.tmpdir(); the repository is read only.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SLOW_MS = 10 * 60_000;
/** The budget per package. */
const MAX_PACKAGES = 2;
/** Bounds a broken run only; the measured seconds are printed, and docs/sdk.md quotes them. */
const INSTALL_BOUND_S = 120;

// No network: npm works from its cache, and says nothing about audits, funding or updates.
const NPM_ENV = { npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: { ...process.env, ...env }, timeout: SLOW_MS, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) =>
      error ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr }),
    );
  });
}

/**
 * docs/sdk.md's examples this file runs, by name (the mark above each block, test/docs/doc-blocks.ts): what the
 * test runs is what the docs show.
 */
function docExamples(): Map<string, string> {
  const blocks = blocksRunBy('test/package/sdk-packages.test.ts');
  return new Map([...blocks].map(([name, block]) => [name, block.text]));
}

type LockEntry = Record<string, unknown> & { dependencies?: Record<string, string> };

/**
 * The scratch project's lockfile: the tarball, and its runtime dependencies pinned to what the
 * repository's lockfile resolved. Offline, npm cannot resolve a version range afresh (its cache holds the
 * locked tarballs, not the registry's metadata), so the scratch install is `npm ci` of this lockfile.
 */
function scratchLockfile(pkgDir: string, tgzName: string, tgz: Buffer): unknown {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as LockEntry & { name: string; version: string };
  const spec = `file:../${tgzName}`;
  const packages: Record<string, LockEntry> = {
    '': { name: 'scratch', dependencies: { [pkg.name]: spec } },
    [`node_modules/${pkg.name}`]: { version: pkg.version, resolved: spec, integrity: `sha512-${createHash('sha512').update(tgz).digest('base64')}`, dependencies: pkg.dependencies },
  };
  const pending = Object.keys(pkg.dependencies ?? {});
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    const key = `node_modules/${name}`;
    const entry = lock.packages[key];
    if (entry === undefined) throw new Error(`${name} is not in package-lock.json`);
    if (packages[key]) continue;
    const copy = { ...entry };
    delete copy.dev;
    delete copy.devOptional;
    // The repository's lockfile leaves out registry URLs; npm finds the cached tarball by URL and integrity.
    copy.resolved ??= `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${String(copy.version)}.tgz`;
    packages[key] = copy;
    pending.push(...Object.keys(entry.dependencies ?? {}));
  }
  return { name: 'scratch', lockfileVersion: 3, requires: true, packages };
}

interface Installed {
  dir: string;
  packages: string[];
  seconds: number;
  npmOutput: string;
}

let tmp: string;
let checkout: string;
const installed = new Map<'client' | 'backend', Installed>();

async function install(name: 'client' | 'backend', tarball: string): Promise<Installed> {
  const dir = path.join(tmp, `project-${name}`);
  mkdirSync(dir);
  const tgzName = path.basename(tarball);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }, null, 2));
  writeFileSync(path.join(dir, 'package-lock.json'), JSON.stringify(scratchLockfile(path.join(root, 'packages', name), tgzName, readFileSync(tarball)), null, 2));
  const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...pkg, dependencies: { [`@tabwire/${name}`]: `file:../${tgzName}` } }, null, 2));
  const started = performance.now();
  const out = await run('npm', ['ci'], dir, NPM_ENV);
  const seconds = (performance.now() - started) / 1000;
  const lock = JSON.parse(readFileSync(path.join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packages = Object.keys(lock.packages).map((key) => key.slice('node_modules/'.length));
  console.log(`@tabwire/${name}: ${packages.length} package(s) installed (${packages.join(', ')}) in ${seconds.toFixed(1)} s`);
  return { dir, packages, seconds, npmOutput: out.stdout + out.stderr };
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'tabwire-sdk-'));
  checkout = path.join(tmp, 'checkout');
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root);
  for (const file of stdout.split('\0').filter(Boolean)) {
    if (!existsSync(path.join(root, file))) continue; // deleted in the work tree, not yet committed
    mkdirSync(path.dirname(path.join(checkout, file)), { recursive: true });
    copyFileSync(path.join(root, file), path.join(checkout, file));
  }
  expect(readdirSync(path.join(checkout, 'packages', 'client'))).not.toContain('dist');
  // The build tools, as `npm ci` in a clone puts them.
  symlinkSync(path.join(root, 'node_modules'), path.join(checkout, 'node_modules'), 'dir');
  const packed = await run('npm', ['pack', '-w', 'packages/client', '-w', 'packages/backend', '--pack-destination', tmp], checkout, NPM_ENV);
  const tarballs = packed.stdout.split('\n').filter((line) => line.endsWith('.tgz'));
  expect(tarballs).toEqual(['tabwire-client-0.1.0.tgz', 'tabwire-backend-0.1.0.tgz']);
  for (const name of ['client', 'backend'] as const) installed.set(name, await install(name, path.join(tmp, `tabwire-${name}-0.1.0.tgz`)));
}, SLOW_MS);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the SDK packages, packed and installed into an empty project', () => {
  it.each(['client', 'backend'] as const)('@tabwire/%s keeps to the budget: at most 2 packages, no install script, no native build', (name) => {
    const result = installed.get(name)!;
    expect(result.packages.length).toBeLessThanOrEqual(MAX_PACKAGES);
    expect(result.packages[0]).toBe(`@tabwire/${name}`);
    expect(result.seconds).toBeLessThan(INSTALL_BOUND_S);
    const lock = JSON.parse(readFileSync(path.join(result.dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    expect(Object.entries(lock.packages).filter(([, entry]) => entry.hasInstallScript === true)).toEqual([]);
    // npm 11 names every package whose install scripts `allowScripts` does not cover.
    expect(result.npmOutput).not.toMatch(/install-scripts|allowScripts/);
    const files = readdirSync(path.join(result.dir, 'node_modules'), { recursive: true }).map(String);
    expect(files.filter((file) => file.endsWith('.node') || file.endsWith('binding.gyp'))).toEqual([]);
    // Built files only, with their declarations; the build stamp stays home.
    const shipped = files.filter((file) => file.startsWith(path.join('@tabwire', name)));
    expect(shipped.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    expect(shipped.some((file) => file.endsWith('.build-stamp'))).toBe(false);
    expect(shipped).toContain(path.join('@tabwire', name, 'dist', name === 'client' ? 'index.d.ts' : path.join('callbacks', 'verify.d.ts')));
  });

  it.each([
    [
      'client',
      { module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM'], types: [] },
      `import { createEventClient, qrImageSource, type EventsApi, type QuickLoginResult, type QuickLoginSession } from '@tabwire/client';
export function page(): QuickLoginSession {
  const events: EventsApi = createEventClient();
  return events.quickLogin({ mode: 'image', purpose: 'Log in', onCode: (code) => qrImageSource(code), onResult: (r: QuickLoginResult) => r.Id });
}
// @ts-expect-error: 'svg' is not a QR mode (the declarations are real types, not any)
export const wrong = (events: EventsApi) => events.quickLogin({ mode: 'svg', purpose: 'x' });
`,
    ],
    [
      'backend',
      { module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2022'], types: ['node'] },
      `import { CallbackVerificationError, verifyCallback, verifyResultSignature, type VerifyOptions } from '@tabwire/backend';
export function check(headers: Record<string, string>, body: string, key: string, result: unknown): string | undefined {
  const options: VerifyOptions = { toleranceSeconds: 60 };
  try {
    verifyCallback(headers, body, key, options);
  } catch (err) {
    if (!(err instanceof CallbackVerificationError)) throw err;
  }
  return verifyResultSignature(result, { keys: [] });
}
// @ts-expect-error: a string is not the keys
export const wrong = () => verifyResultSignature({}, 'keys');
`,
    ],
  ] as const)('@tabwire/%s ships declarations that type-check a user of it (skipLibCheck off)', async (name, options, source) => {
    const { dir } = installed.get(name)!;
    writeFileSync(path.join(dir, 'check.ts'), source);
    const compilerOptions = { target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, typeRoots: [path.join(root, 'node_modules', '@types')], ...options };
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['check.ts'] }));
    await run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir);
  }, SLOW_MS);

  it('the backend example of docs/sdk.md accepts a callback signed as the service signs it and refuses a tampered body', async () => {
    const { dir } = installed.get('backend')!;
    const example = docExamples().get('server.mjs');
    expect(example, 'docs/sdk.md has a ```js file=server.mjs block').toBeDefined();
    writeFileSync(path.join(dir, 'server.mjs'), example!);
    const { privateKey } = generateKeyPairSync('ed25519');
    let output = '';
    const server: ChildProcess = spawn(process.execPath, ['server.mjs'], {
      cwd: dir,
      env: { ...process.env, PORT: '0', TABWIRE_WEBHOOK_KEY: `whpk_${rawPublicKey(privateKey)}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await until(() => /listening on \d+/.test(output) || server.exitCode !== null, 'the example server listening', 30_000);
      const port = Number(/listening on (\d+)/.exec(output)?.[1]);
      expect(port, output).toBeGreaterThan(0);
      const body = JSON.stringify({ Id: 'id-1@legal.example.org', Properties: { FIRST: 'Ada' }, Purpose: 'Log in', SessionId: 's1', ServiceId: 'shop' });
      const timestamp = Math.floor(Date.now() / 1000);
      const headers = {
        'content-type': 'application/json',
        'webhook-id': 'msg_code1',
        'webhook-timestamp': String(timestamp),
        'webhook-signature': await webhookSignatureHeader({ id: 'msg_code1', timestamp, body, signEd25519: (content) => signOnThreadPool(content, privateKey), secret: null }),
      };
      const post = (text: string) => fetch(`http://127.0.0.1:${port}/tabwire/callback`, { method: 'POST', headers, body: text });
      expect((await post(body)).status).toBe(204);
      await until(() => output.includes('signed in: id-1@legal.example.org'), 'the example logging the verified identity');
      expect((await post(body.replace('Ada', 'Eve'))).status).toBe(401);
      expect(output).not.toContain('Eve');
    } finally {
      await terminate(server);
    }
  });

  it('the page example of docs/sdk.md bundles with esbuild into a script that imports nothing at run time', async () => {
    const { dir } = installed.get('client')!;
    const example = docExamples().get('login-page.js');
    expect(example, 'docs/sdk.md has a ```js file=login-page.js block').toBeDefined();
    writeFileSync(path.join(dir, 'login-page.js'), example!);
    const result = await esbuild.build({
      absWorkingDir: dir,
      entryPoints: ['login-page.js'],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      metafile: true,
      outfile: path.join(dir, 'public', 'login-page.js'),
      logLevel: 'silent',
    });
    expect(Object.keys(result.metafile.inputs).sort()).toEqual(['login-page.js', 'node_modules/@tabwire/client/dist/index.js']);
    const [output] = Object.values(result.metafile.outputs);
    // Neither a static nor a dynamic import is left for the page to load.
    expect(output!.imports).toEqual([]);
    const code = result.outputFiles[0]!.text;
    expect(code).toContain('/QuickLogin');
    expect(code).not.toMatch(/\bimport\s*\(|\brequire\(/);
  });

  it('@tabwire/client installs from git with ::path:, built on the way, with no install script of its own', async () => {
    // The checkout as a repository of one commit, what npm clones from a git URL.
    const git = (...args: string[]) => run('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.org', ...args], checkout);
    await git('init', '-q');
    await git('add', '-A', '--', '.', ':!node_modules');
    await git('commit', '-q', '-m', 'checkout');
    const commit = (await git('rev-parse', 'HEAD')).stdout.trim();
    const dir = path.join(tmp, 'project-git');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }, null, 2));
    const started = performance.now();
    const out = await run('npm', ['install', `git+file://${checkout}#${commit}::path:packages/client`], dir, NPM_ENV);
    const seconds = (performance.now() - started) / 1000;
    const lock = JSON.parse(readFileSync(path.join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const packages = Object.keys(lock.packages);
    console.log(`@tabwire/client from git: ${packages.length} package(s) installed in ${seconds.toFixed(1)} s`);
    expect(packages).toEqual(['node_modules/@tabwire/client']);
    expect(out.stdout + out.stderr).not.toMatch(/install-scripts|allowScripts/);
    const shipped = readdirSync(path.join(dir, 'node_modules', '@tabwire', 'client'), { recursive: true }).map(String);
    expect(shipped).toEqual(expect.arrayContaining([path.join('dist', 'index.js'), path.join('dist', 'index.d.ts')]));
    expect(shipped.filter((file) => file.startsWith('src') || file.endsWith('.build-stamp'))).toEqual([]);
  }, SLOW_MS);
});
