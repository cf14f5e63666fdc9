import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runToEnd } from '../helpers/child.js';
import { assertFreshBuild } from '../helpers/process.js';
import { blockNamed, blocksRunBy } from './doc-blocks.js';
import { readerEnv, shell } from './doc-shell.js';

/**
 * docs/deployment.md "A local cluster": `scripts/cluster up 3` then `down`, as the document shows them, with
 * one change: `--dir` points each line at a temporary directory instead of ./tmp/cluster, so a cluster a
 * developer runs in the clone is not touched. The build is fresh first, so the script never builds here.
 */

const blocks = blocksRunBy('test/docs/doc-cluster.test.ts');
// The postgres user must enter it (mkdtemp makes it 0700).
const dir = mkdtempSync(join(tmpdir(), 'tabwire-doc-cluster-'));
chmodSync(dir, 0o755);

afterAll(async () => {
  await runToEnd('scripts/cluster', ['down', '--dir', dir], process.env).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

/** Whether the process runs (a zombie waiting to be reaped does not). */
function running(pid: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)![0] !== 'Z';
  } catch {
    return false;
  }
}

describe('docs/deployment.md', () => {
  it('runs every block marked for this file', () => {
    expect([...blocks.keys()]).toEqual(['cluster']);
  });

  it('scripts/cluster up N prints "node <i> <url>" per node once each is ready; down leaves no process running', async () => {
    assertFreshBuild();
    const lines = blockNamed(blocks, 'cluster')
      .text.split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line !== '');
    expect(lines).toHaveLength(2);
    const count = Number(/^scripts\/cluster up (\d+)$/.exec(lines[0]!)?.[1]);
    expect(count, lines[0]).toBeGreaterThan(0);
    expect(lines[1]).toBe('scripts/cluster down');
    const [up, down] = lines.map((line) => `${line} --dir '${dir}'`) as [string, string];

    const started = shell(up, { cwd: process.cwd(), env: readerEnv() });
    expect(await started.exited, started.stderr).toBe(0);
    const nodes = started.stdout.trim().split('\n');
    expect(nodes).toHaveLength(count);
    nodes.forEach((line, n) => expect(line).toMatch(new RegExp(`^node ${n + 1} http://127\\.0\\.0\\.1:\\d+$`)));
    for (const line of nodes) expect((await fetch(`${line.split(' ')[2]}/readyz`)).status).toBe(200);
    const pids = readFileSync(join(dir, 'pids'), 'utf8').trim().split('\n').map((line) => line.split(' ') as [string, string]);
    expect(pids.map(([name]) => name).sort()).toEqual([...nodes.map((_, n) => `node-${n + 1}`), 'postgres', 'redis'].sort());
    const postmaster = readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]!;

    const stopped = shell(down, { cwd: process.cwd(), env: readerEnv() });
    expect(await stopped.exited, stopped.stderr).toBe(0);
    expect([...pids.map(([, pid]) => pid), postmaster].filter(running)).toEqual([]);
  }, 240_000);
});
