import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runToEnd, type Finished } from '../helpers/child.js';
import { freePorts } from '../helpers/cluster.js';
import { assertFreshBuild } from '../helpers/process.js';
import { until } from '../helpers/until.js';

/**
 * `scripts/cluster` for real (docs/deployment.md "A local cluster"): a private PostgreSQL and Redis, nodes,
 * and `down` stopping every process it started. The build is fresh first, so the script never builds here.
 */
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) {
    await script(['down', '--dir', dir]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A directory the postgres user can enter (mkdtemp makes it 0700). */
function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-cluster-script-'));
  chmodSync(dir, 0o755);
  dirs.push(dir);
  return dir;
}

const script = (args: string[], env: Record<string, string> = {}): Promise<Finished> => runToEnd('scripts/cluster', args, { ...process.env, ...env });

/** `name pid` lines of DIR/pids. */
const recorded = (dir: string) =>
  readFileSync(join(dir, 'pids'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' ') as [string, string]);
/** Whether the process runs (a zombie waiting for init to reap it does not). */
function running(pid: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1)![0] !== 'Z';
  } catch {
    return false;
  }
}
const settings = (dir: string) => Object.fromEntries(readFileSync(join(dir, 'cluster.env'), 'utf8').trim().split('\n').map((l) => l.split(/=(.*)/s).slice(0, 2) as [string, string]));

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('scripts/cluster', () => {
  it('up 0 starts PostgreSQL and Redis; down stops both by pid and keeps the data, which the next up reuses; down --remove deletes it', async () => {
    assertFreshBuild();
    const dir = workDir();
    const base = await freePorts(2);
    const ports = ['--pg-port', String(base), '--redis-port', String(base + 1)];
    const up = await script(['up', '0', '--dir', dir, ...ports]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toBe('');
    const env = settings(dir);
    expect(env.TABWIRE_DATABASE_URL).toMatch(/^postgres:\/\/tabwire@127\.0\.0\.1:\d+\/tabwire$/);
    await query(env.TABWIRE_DATABASE_URL!, 'CREATE TABLE kept (n integer)');
    const redis = new Redis(env.TABWIRE_REDIS_URL!);
    expect(await redis.ping()).toBe('PONG');
    redis.disconnect();
    const pids = recorded(dir);
    expect(pids.map(([name]) => name).sort()).toEqual(['postgres', 'redis']);
    expect(pids.every(([, pid]) => running(pid))).toBe(true);
    const postmaster = readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]!;

    const down = await script(['down', '--dir', dir]);
    expect(down.code, down.stderr).toBe(0);
    expect([...pids.map(([, pid]) => pid), postmaster].filter(running)).toEqual([]);
    expect(existsSync(join(dir, 'pg', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(dir, 'postgres.log'))).toBe(true);

    const again = await script(['up', '0', '--dir', dir, ...ports]);
    expect(again.code, again.stderr).toBe(0);
    expect(await query(settings(dir).TABWIRE_DATABASE_URL!, "SELECT to_regclass('kept') IS NOT NULL AS kept")).toEqual([{ kept: true }]);
    const removed = await script(['down', '--dir', dir, '--remove']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(existsSync(dir)).toBe(false);
  }, 120_000);

  it('a start whose process has not exec\'d its command yet (a busy machine) is waited for, never reported as exited; down leaves nothing running', async () => {
    // `up` once said "PostgreSQL exited" while it ran and left it behind: the process was judged by its command
    // line while it was still the script's forked shell. The hook holds each started process there until released.
    assertFreshBuild();
    const dir = workDir();
    const gate = join(dir, 'exec-gate');
    execFileSync('mkfifo', [gate]);
    const base = await freePorts(2);
    const up = spawn('scripts/cluster', ['up', '0', '--dir', dir, '--pg-port', String(base), '--redis-port', String(base + 1)], {
      env: { ...process.env, TABWIRE_CLUSTER_TEST_EXEC_GATE: gate },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    up.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    up.stdout.resume();
    const ended = new Promise<number | null>((resolve) => up.once('exit', (code) => resolve(code)));
    for (const name of ['postgres', 'redis']) {
      // Held before its exec for as long as the script looks (it says so after a second); then let go.
      const waiting = new RegExp(`${name} \\(pid \\d+\\) has not started its command yet; waiting`);
      await until(() => waiting.test(stderr) || up.exitCode !== null, `the script waiting for ${name}`, 60_000);
      expect(up.exitCode, stderr).toBeNull();
      await writeFile(gate, 'go\n');
    }
    expect(await ended, stderr).toBe(0);
    expect(stderr).not.toMatch(/exited|did not start/);
    const pids = recorded(dir);
    expect(pids.map(([name]) => name).sort()).toEqual(['postgres', 'redis']);
    expect(pids.every(([, pid]) => running(pid))).toBe(true);
    const postmaster = readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]!;

    const down = await script(['down', '--dir', dir]);
    expect(down.code, down.stderr).toBe(0);
    expect([...pids.map(([, pid]) => pid), postmaster].filter(running)).toEqual([]);
  }, 180_000);

  it('up 2 --store sqlite prints one line per node once each answers /readyz; down stops them', async () => {
    assertFreshBuild();
    const dir = workDir();
    const port = await freePorts(3);
    const up = await script(['up', '2', '--store', 'sqlite', '--dir', dir, '--port', String(port), '--redis-port', String(port + 2)]);
    expect(up.code, up.stderr).toBe(0);
    const lines = up.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    const urls = lines.map((line, n) => {
      const match = /^node (\d+) (http:\/\/127\.0\.0\.1:(\d+))$/.exec(line);
      expect(match?.[1]).toBe(String(n + 1));
      return match![2]!;
    });
    expect(urls).toEqual([`http://127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`]);
    for (const url of urls) expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const pids = recorded(dir);
    expect(pids.map(([name]) => name).sort()).toEqual(['node-1', 'node-2', 'redis']);

    const down = await script(['down', '--dir', dir]);
    expect(down.code, down.stderr).toBe(0);
    expect(pids.map(([, pid]) => pid).filter(running)).toEqual([]);
    expect(existsSync(join(dir, 'node-1.log'))).toBe(true);
  }, 120_000);

  it('a node that cannot start: exit 1, its log named, nothing left running', async () => {
    assertFreshBuild();
    const dir = workDir();
    const port = await freePorts(2);
    const redisPort = port + 1;
    const up = await script(['up', '1', '--store', 'sqlite', '--dir', dir, '--port', String(port), '--redis-port', String(redisPort)], {
      TABWIRE_OUTBOX_LIMIT: 'many',
    });
    expect(up.code).toBe(1);
    expect(up.stdout).toBe('');
    expect(up.stderr).toContain(join(dir, 'node-1.log'));
    expect(up.stderr).toContain('outboxLimit');
    expect(existsSync(join(dir, 'pids'))).toBe(false);
    expect(await listening(redisPort)).toBe(false);
    expect((await script(['status', '--dir', dir])).code).not.toBe(0);
  }, 120_000);
});
