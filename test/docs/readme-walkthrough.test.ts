import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kill, startProcess } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { blockNamed, blocksRunBy } from './doc-blocks.js';
import { readerEnv, shell, type Shell } from './doc-shell.js';

/**
 * README.md's walkthrough, run as written: its three shell blocks, taken from the Markdown (so the README
 * cannot drift from what works), against the built service on a free port instead of 8080. The person's
 * answer at the signer's prompt is typed in (`y`), as the README says. Twice, because a reader runs it twice.
 */

const SLOW = { timeout: 120_000 };
const root = process.cwd();
let port: number;
let service: ChildProcess;
let dir: string;
let env: NodeJS.ProcessEnv;
const keyFiles: string[] = [];

/** The README's walkthrough blocks (marked as run by this file), the service's port for 8080. */
function walkthroughBlocks(): string[] {
  const blocks = blocksRunBy('test/docs/readme-walkthrough.test.ts');
  expect([...blocks.values()].map((b) => b.doc)).toEqual(['README.md', 'README.md', 'README.md']);
  return ['identity', 'page', 'signer'].map((name) => blockNamed(blocks, name).text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`));
}

/** Runs one block with bash in the clone, as a foreground child of the test. */
const inClone = (script: string, input?: string): Shell => shell(script, { cwd: root, env, ...(input === undefined ? {} : { input }) });

beforeAll(async () => {
  port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'tabwire-walkthrough-'));
  // The reader's environment, with the service's store where this test keeps it (the CLI opens the same file).
  env = readerEnv({ TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'), TABWIRE_LOG_LEVEL: 'warn' });
  service = await startProcess({ TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'), TABWIRE_LOG_LEVEL: 'warn' }, `http://127.0.0.1:${port}`);
});

afterAll(async () => {
  if (service) await kill(service, 'SIGTERM');
  for (const file of keyFiles) rmSync(file, { force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('the README walkthrough', () => {
  it('has three blocks: the identity, the page, the signer', () => {
    const blocks = walkthroughBlocks();
    expect(blocks).toHaveLength(3);
    expect(blocks[2]).toContain('<the signUrl printed above>');
  });

  for (const run of [1, 2]) {
    it(`prints the signUrl, then CheckServerInstance and SignatureReceived with the filtered properties (run ${run})`, SLOW, async () => {
      const [identityBlock, pageBlock, signBlock] = walkthroughBlocks() as [string, string, string];

      const identity = inClone(identityBlock);
      expect(await identity.exited, identity.stderr).toBe(0);
      const keyFile = /key file: (\S+)/.exec(identity.stdout)![1]!;
      keyFiles.push(resolve(root, keyFile));
      expect(readFileSync(resolve(root, keyFile), 'utf8')).toMatch(/^tabwire-legal-id: \S+@/);

      const page = inClone(pageBlock);
      try {
        await until(() => /signUrl: \S+/.test(page.stdout) || page.child.exitCode !== null, 'the page to print its signUrl', 60_000);
        const signUrl = /signUrl: (\S+)/.exec(page.stdout)?.[1];
        expect(signUrl, page.stderr).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/QuickLogin/Sign/`));

        const signer = inClone(signBlock.replace('<the signUrl printed above>', signUrl!).replace('<the key file printed above>', keyFile), 'y\n');
        expect(await signer.exited, signer.stderr).toBe(0);
        expect(signer.stdout).toMatch(/approved/);

        expect(await page.exited, page.stderr).toBe(0);
        const events = [...page.stdout.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
        expect(events).toEqual(['CheckServerInstance', 'SignatureReceived']);
        const result = JSON.parse(page.stdout.slice(page.stdout.indexOf('event: SignatureReceived') + 'event: SignatureReceived'.length));
        expect(result.Properties).toEqual({ FIRST: 'Ada', COUNTRY: 'GB' });
        expect(result.ServerSignature).toMatch(/^[A-Za-z0-9+/]{86}==$/);
      } finally {
        await page.stop();
      }
    });
  }
});
