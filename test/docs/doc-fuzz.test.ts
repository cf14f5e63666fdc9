import { afterAll, describe, expect, it } from 'vitest';
import { blockNamed, blocksRunBy } from './doc-blocks.js';
import { readerEnv, shell, type Shell } from './doc-shell.js';

/**
 * docs/reliability.md "The fuzz command": the short run it shows, as written. The command starts its own
 * service (src/ through tsx, no build) on a loopback port and stops it by pid; its report is what the
 * document promises.
 */

const blocks = blocksRunBy('test/docs/doc-fuzz.test.ts');
let run: Shell | undefined;
afterAll(async () => run?.stop());

describe('docs/reliability.md', () => {
  it('runs every block marked for this file', () => {
    expect([...blocks.keys()]).toEqual(['short-run']);
  });

  it('the short fuzz run sends its cases and reports no failure, a healthy service and a working login', async () => {
    run = shell(blockNamed(blocks, 'short-run').text, { cwd: process.cwd(), env: readerEnv() });
    const status = await run.exited;
    expect(status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^ {2}cases +500 of 500 in [\d.]+ s \(\d+\/s\), seed 7$/m);
    expect(run.stdout).toMatch(/^Failure classes: 0$/m);
    for (const count of ['5xx', '4xx not catalogue problem\\+json', 'WebSocket 1011', 'valid requests refused', 'guard bypassed', 'stored stanzas that are not XML']) {
      expect(run.stdout).toMatch(new RegExp(`^ {2}${count} +0$`, 'm'));
    }
    expect(run.stdout).toMatch(/^ {2}service +up, \/healthz 200$/m);
    expect(run.stdout).toMatch(/^ {2}normal login +ok/m);
  }, 240_000);
});
