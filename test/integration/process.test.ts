import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { assertFreshBuild } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// These run the built program (`npm run build` comes first in the test command), as an operator would.
const run = promisify(execFile);
const MAIN = 'dist/main.js';
const CLI = 'dist/cli/main.js';

let dir: string;
let env: NodeJS.ProcessEnv;
let server: ChildProcess;
let baseUrl: string;

async function waitForHealth(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error('service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  assertFreshBuild();
  dir = mkdtempSync(join(tmpdir(), 'tabwire-process-'));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  env = { PATH: process.env.PATH, TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'db.sqlite'), TABWIRE_LOG_LEVEL: 'warn' };
  server = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  await waitForHealth(baseUrl);
});

afterAll(async () => {
  if (server.exitCode === null) server.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('the service process and the tabwire CLI', () => {
  it('identity create writes a 0600 key; tabwire sign approves; the tab gets the result', async () => {
    const keyFile = join(dir, 'ada.key');
    const created = await run(process.execPath, [CLI, 'identity', 'create', '--prop', 'FIRST=Ada', '--prop', 'LAST=Lovelace', '--key-out', keyFile], { env });
    const id = created.stdout.trim();
    expect(id).toMatch(/@127\.0\.0\.1$/);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect((await run(process.execPath, [CLI, 'identity', 'approve', id], { env })).stdout).toContain('Approved');

    const tab = await TestTab.open(baseUrl.replace('http', 'ws') + '/ClientEventsWS');
    // Register has no answer frame: ask until the tab is known (the deadline only bounds a broken run).
    let answer: Response | undefined;
    for (const deadline = Date.now() + 15_000; answer?.status !== 200 && Date.now() < deadline; ) {
      answer = await fetch(`${baseUrl}/QuickLogin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: tab.cookie },
        body: JSON.stringify({ mode: 'image', purpose: 'Log in to the CLI test', serviceId: '', tab: tab.tabId, propertyFilter: 'LAST' }),
      });
      if (answer.status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    const { signUrl } = (await answer!.json()) as { signUrl: string };
    const signed = await run(process.execPath, [CLI, 'sign', signUrl, '--key', keyFile, '--yes'], { env });
    expect(signed.stdout).toContain('Log in to the CLI test');
    expect(signed.stdout.trim().split('\n').pop()).toBe('approved');
    const result = (await tab.next('SignatureReceived')).data as QuickLoginResult;
    expect(result.Id).toBe(id);
    expect(result.Properties).toEqual({ LAST: 'Lovelace' });

    const again = await run(process.execPath, [CLI, 'sign', signUrl, '--key', keyFile, '--yes'], { env }).catch((e: { code: number; stderr: string }) => e);
    expect((again as { code: number }).code).toBe(1);
    expect((again as { stderr: string }).stderr).toContain('409');
    tab.close();
  });

  it('operator CLI: apikey create, account create with it, token, keys rotate, account disable', async () => {
    const cli = async (...args: string[]) => (await run(process.execPath, [CLI, ...args], { env })).stdout;
    const key = (await cli('apikey', 'create', '--note', 'ci')).split('\t')[1]!.split('\n')[0]!;
    const created = await fetch(`${baseUrl}/Agent/Account/Create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ userName: 'operator-made', password: 'long enough password' }),
    });
    expect(created.status).toBe(201);
    const infoWith = (jwt: string) => fetch(`${baseUrl}/Agent/Account/Info`, { headers: { authorization: `Bearer ${jwt}` } });
    const before = (await cli('token', '--user', 'operator-made', '--seconds', '120')).split('\n')[0]!;
    expect((await infoWith(before)).status).toBe(200);
    const newKid = (await cli('keys', 'rotate')).split('\t')[0]!;
    const after = (await cli('token', '--user', 'operator-made', '--seconds', '120')).split('\n')[0]!;
    expect(JSON.parse(Buffer.from(after.split('.')[0]!, 'base64url').toString()).kid).toBe(newKid);
    // The running service learns the new key on its first unknown kid; the old token keeps working.
    expect((await infoWith(after)).status).toBe(200);
    expect((await infoWith(before)).status).toBe(200);
    expect(await cli('account', 'list')).toContain('operator-made\tactive');
    await cli('account', 'disable', 'operator-made');
    expect(((await (await infoWith(after)).json()) as { code: string }).code).toBe('account_disabled');
    const keyId = (await cli('apikey', 'list')).split('\n')[1]!.split('\t')[0]!; // below the header
    await cli('apikey', 'revoke', keyId);
    const refused = await fetch(`${baseUrl}/Agent/Account/Create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ userName: 'too-late', password: 'long enough password' }),
    });
    expect(refused.status).toBe(403);
  });

  it('stops cleanly on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses bad configuration naming the key', async () => {
    const bad = await run(process.execPath, [MAIN], { env: { ...env, TABWIRE_PORT: 'eighty', TABWIRE_COLOUR: 'blue' } }).catch((e: { code: number; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(2);
    expect((bad as { stderr: string }).stderr).toContain('TABWIRE_PORT');
    expect((bad as { stderr: string }).stderr).toContain('TABWIRE_COLOUR: unknown setting');
  });

  it('refuses TABWIRE_HOST=0.0.0.0 without a public base URL instead of handing out http://0.0.0.0 signUrls', async () => {
    const bad = await run(process.execPath, [MAIN], { env: { ...env, TABWIRE_HOST: '0.0.0.0' } }).catch((e: { code: number; stderr: string }) => e);
    expect((bad as { code: number }).code).toBe(2);
    expect((bad as { stderr: string }).stderr).toContain('TABWIRE_PUBLIC_BASE_URL');
  });
});
