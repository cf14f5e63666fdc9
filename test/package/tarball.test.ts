import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawPublicKey } from '../../src/identity/keys.js';
import { signOnThreadPool } from '../../src/callbacks/batch-signer.js';
import { webhookSignatureHeader } from '../../src/callbacks/webhook-signature.js';

/**
 * The SDKs as a team installs them (docs/sdk.md "Installing"): a checkout without dist/ is packed the way
 * an install from git packs it (`npm pack` runs the `prepare` build), the tarball is installed in a scratch
 * project, and `tabwire/client` and `tabwire/backend` type-check and run there. Everything happens under
 * os.tmpdir(); the repository is only read. Slow (a full build and an install): its own generous timeouts.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TSC = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const SLOW_MS = 10 * 60_000;

let tmp: string;
let tarball: string;
let scratch: string;

/** Runs a command; rejects with its output when it fails or outlives `timeoutMs`. */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = SLOW_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd, env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => (error ? reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

// No network: every npm call works from the local cache (~/.npm), and says nothing about audits or funding.
const NPM_ENV = { npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

/**
 * A lockfile for the scratch project, pinned to what the repository's lockfile resolved for tabwire's
 * runtime dependencies. Offline, npm cannot resolve version ranges afresh (the cache holds every locked
 * tarball, not the registry's metadata documents), so the scratch install is `npm ci` of this lockfile,
 * as in any project that has tabwire in its own lockfile.
 */
function scratchLockfile(tgzName: string, tgz: Buffer): unknown {
  const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
  const spec = `file:../${tgzName}`;
  const packages: Record<string, Record<string, unknown>> = {
    '': { name: 'scratch', dependencies: { tabwire: spec } },
    'node_modules/tabwire': {
      version: pkg.version,
      resolved: spec,
      integrity: `sha512-${createHash('sha512').update(tgz).digest('base64')}`,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  };
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (!key.startsWith('node_modules/') || entry.dev === true || entry.link === true) continue;
    const copy = { ...entry };
    // Needed by a dev path and an optional one in the repository: only the optional one exists here.
    if (copy.devOptional) {
      delete copy.devOptional;
      copy.optional = true;
    }
    // The repository's lockfile leaves out registry URLs; npm finds the cached tarball by URL and integrity.
    if (copy.resolved === undefined) {
      const name = typeof copy.name === 'string' ? copy.name : key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
      copy.resolved = `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${String(copy.version)}.tgz`;
    }
    packages[key] = copy;
  }
  return { name: 'scratch', lockfileVersion: 3, requires: true, packages };
}

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'tabwire-pack-'));
  const checkout = path.join(tmp, 'checkout');
  const files = (await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], root)).split('\0').filter(Boolean);
  for (const file of files) {
    const from = path.join(root, file);
    if (!existsSync(from)) continue; // deleted in the work tree, not yet committed
    mkdirSync(path.dirname(path.join(checkout, file)), { recursive: true });
    copyFileSync(from, path.join(checkout, file));
  }
  expect(existsSync(path.join(checkout, 'dist'))).toBe(false);
  // The build tools, as `npm install` in a clone would have put them (an install from git does exactly that).
  symlinkSync(path.join(root, 'node_modules'), path.join(checkout, 'node_modules'), 'dir');
  // `npm pack` runs `prepare`, which builds dist/: what an install from git does before packing.
  const packed = await run('npm', ['pack', '--pack-destination', tmp], checkout, NPM_ENV);
  tarball = path.join(tmp, packed.trim().split('\n').at(-1)!);

  scratch = path.join(tmp, 'scratch');
  mkdirSync(scratch);
  const tgzName = path.basename(tarball);
  writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module', dependencies: { tabwire: `file:../${tgzName}` } }, null, 2));
  writeFileSync(path.join(scratch, 'package-lock.json'), JSON.stringify(scratchLockfile(tgzName, readFileSync(tarball)), null, 2));
  // --ignore-scripts: the one install script among the runtime dependencies is better-sqlite3's native
  // build, which downloads a prebuilt binary; the SDK entry points never load it.
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts'], scratch, NPM_ENV);
}, SLOW_MS);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds the built service and SDK entry points with their declarations, and no sources, tests or build inputs', async () => {
    const listed = (await run('tar', ['-tzf', tarball], tmp)).split('\n').filter(Boolean);
    for (const file of [
      'package/package.json',
      'package/dist/client/index.js',
      'package/dist/client/index.d.ts',
      'package/dist/client/types/browser/quick-login.d.ts',
      'package/dist/callbacks/verify.js',
      'package/dist/callbacks/verify.d.ts',
      'package/dist/public/Events.js',
      'package/dist/main.js',
      'package/dist/cli/main.js',
      'package/public/index.html',
      'package/public/favicon.png',
      'package/README.md',
    ]) {
      expect(listed, file).toContain(file);
    }
    const stray = listed.filter((f) => /^package\/(src|test|bench|scripts|node_modules|tmp|data)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')));
    expect(stray).toEqual([]);
  });

  it('installs in a scratch project, offline, with its runtime dependencies', () => {
    const installed = JSON.parse(readFileSync(path.join(scratch, 'node_modules', 'tabwire', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const dependency of Object.keys(installed.dependencies)) expect(existsSync(path.join(scratch, 'node_modules', dependency, 'package.json')), dependency).toBe(true);
    // Dev-only packages stayed out.
    for (const dev of ['vitest', 'typescript', 'esbuild', 'playwright-core']) expect(existsSync(path.join(scratch, 'node_modules', dev)), dev).toBe(false);
    expect(readdirSync(path.join(scratch, 'node_modules', 'tabwire', 'dist', 'client'))).toContain('index.d.ts');
  });

  it.each([
    ['NodeNext', { module: 'NodeNext', moduleResolution: 'NodeNext' }],
    ['Bundler', { module: 'ESNext', moduleResolution: 'Bundler' }],
  ])('type-checks a page and a backend importing tabwire/client and tabwire/backend (%s resolution)', async (name, resolution) => {
    const dir = path.join(scratch, `check-${name}`);
    mkdirSync(dir);
    writeFileSync(
      path.join(dir, 'check.ts'),
      `import { createEventClient, EventTypes, qrImageSource, QuickLoginError, type EventsApi, type QuickLoginResult, type QuickLoginSession } from 'tabwire/client';
import { CallbackVerificationError, verifyCallback, type VerifyOptions } from 'tabwire/backend';

export function page(): QuickLoginSession {
  const events: EventsApi = createEventClient();
  events.connect();
  return events.quickLogin({
    mode: 'image',
    purpose: 'Log in to the shop',
    refreshMs: 2000,
    onCode: (code) => console.log(qrImageSource(code), code.signUrl),
    onResult: (result: QuickLoginResult) => console.log(result.Id, result.Properties.FIRST),
    onRejected: (rejection) => console.log(rejection.Purpose),
    onBackendDone: () => console.log(EventTypes.SignatureReceivedBE),
    onError: (error: QuickLoginError) => console.log(error.status, error.code, error.retrying),
  });
}

export function misuse(events: EventsApi): void {
  // @ts-expect-error: 'svg' is not a QR mode (the declarations are real types, not any)
  events.quickLogin({ mode: 'svg', purpose: 'x' });
}

export function backend(headers: Record<string, string>, rawBody: string, key: string): unknown {
  const options: VerifyOptions = { toleranceSeconds: 60 };
  try {
    return verifyCallback(headers, rawBody, key, options);
  } catch (err) {
    if (err instanceof CallbackVerificationError) return undefined;
    throw err;
  }
}

// @ts-expect-error: only the exported entry points are the package's API
export const deep = import('tabwire/dist/app.js');
`,
    );
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          ...resolution,
          strict: true,
          noEmit: true,
          // The shipped declarations are checked too.
          skipLibCheck: false,
          lib: ['ES2022', 'DOM'],
          types: ['node'],
          typeRoots: [path.join(root, 'node_modules', '@types')],
        },
        files: ['check.ts'],
      }),
    );
    await run(process.execPath, [TSC, '-p', path.join(dir, 'tsconfig.json')], dir);
  }, SLOW_MS);

  it('runs: tabwire/backend verifies a callback signed as the service signs it and refuses a tampered one; tabwire/client imports', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const timestamp = 1_800_000_000;
    const body = JSON.stringify({ Id: 'id-1@legal.example.org', Properties: { FIRST: 'Ada' }, Purpose: 'Log in', SessionId: 's1', ServiceId: 'shop' });
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_code1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': await webhookSignatureHeader({ id: 'msg_code1', timestamp, body, signEd25519: (content) => signOnThreadPool(content, privateKey), secret: null }),
    };
    writeFileSync(path.join(scratch, 'sample.json'), JSON.stringify({ headers, body, timestamp, publicKey: `whpk_${rawPublicKey(privateKey)}` }));
    writeFileSync(
      path.join(scratch, 'run.mjs'),
      `import { readFileSync } from 'node:fs';
import { CallbackVerificationError, ResultVerificationError, verifyCallback, verifyResultSignature } from 'tabwire/backend';
import * as client from 'tabwire/client';

const sample = JSON.parse(readFileSync('sample.json', 'utf8'));
const now = new Date(sample.timestamp * 1000);
const refusal = (body) => {
  try {
    verifyCallback(sample.headers, body, sample.publicKey, { now });
    return 'accepted';
  } catch (err) {
    return err instanceof CallbackVerificationError ? err.message : 'other: ' + err;
  }
};
let deep;
try {
  await import('tabwire/dist/app.js');
  deep = 'imported';
} catch (err) {
  deep = err.code;
}
console.log(JSON.stringify({
  verified: verifyCallback(sample.headers, sample.body, sample.publicKey, { now }),
  tampered: refusal(sample.body.replace('Ada', 'Eve')),
  unsignedResult: (() => { try { verifyResultSignature({ Id: 'x' }, []); return 'accepted'; } catch (err) { return err instanceof ResultVerificationError ? err.message : 'other'; } })(),
  client: { createEventClient: typeof client.createEventClient, startQuickLogin: typeof client.startQuickLogin, SignatureReceived: client.EventTypes.SignatureReceived },
  eventsJs: import.meta.resolve('tabwire/Events.js').endsWith('/node_modules/tabwire/dist/public/Events.js'),
  deep,
}));
`,
    );
    const out = JSON.parse(await run(process.execPath, ['run.mjs'], scratch)) as Record<string, unknown>;
    expect(out).toEqual({
      verified: JSON.parse(body),
      tampered: 'no valid v1a signature',
      unsignedResult: 'the result has no ServerSignature',
      client: { createEventClient: 'function', startQuickLogin: 'function', SignatureReceived: 'SignatureReceived' },
      eventsJs: true,
      deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
  });
});
