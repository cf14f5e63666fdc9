import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertFreshBuild, kill } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';

// The built program as an operator runs it (`npm test` builds first): what it prints, and how it exits.
const MAIN = 'dist/main.js';

let dir: string;

beforeAll(() => {
  assertFreshBuild();
  dir = mkdtempSync(join(tmpdir(), 'tabwire-console-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const baseEnv = (port: number, name: string): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  TABWIRE_PORT: String(port),
  TABWIRE_SQLITE_FILE: join(dir, `${name}.sqlite`),
});

/** Runs the service to its exit (it is expected to refuse to start): exit code, stdout and stderr. */
function runToExit(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN], { env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

/** util-linux `script` runs a command on a pseudo-terminal: the service's stdout is then a terminal. */
const SCRIPT = '/usr/bin/script';

/**
 * A running service whose stdout is a pipe (not a terminal), or with `terminal` a pseudo-terminal
 * (through `script`), with the lines it printed so far.
 */
function startPiped(env: NodeJS.ProcessEnv, terminal = false): { child: ChildProcess; lines: string[]; until: (test: (line: string) => boolean) => Promise<string> } {
  const child = terminal
    ? spawn(SCRIPT, ['-qfec', `exec "${process.execPath}" ${MAIN}`, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'inherit'] })
    : spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split(/\r?\n/);
    partial = parts.pop()!;
    lines.push(...parts.filter((l) => l !== ''));
  });
  /** Waits for a line that passes `test` (the deadline only bounds a broken run). */
  const until = async (test: (line: string) => boolean): Promise<string> => {
    for (const deadline = Date.now() + 20_000; ; ) {
      const found = lines.find(test);
      if (found !== undefined) return found;
      if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${lines.join('\n')}`);
      if (Date.now() > deadline) throw new Error(`no such line:\n${lines.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return { child, lines, until };
}

describe('the console of the service process', () => {
  let holder: Server | undefined;
  afterAll(() => holder?.close());

  it('a port already in use: one line naming the port and the setting, no stack trace, exit 1', async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const { code, stderr } = await runToExit(baseEnv(port, 'in-use'));
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`127.0.0.1:${port}`);
    expect(lines[0]).toContain(`port ${port} is already in use`);
    expect(lines[0]).toContain('TABWIRE_PORT');
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr).not.toContain('EADDRINUSE');
  });

  it('stdout that is no terminal gets JSON lines, the start line among them with the demo and /docs URLs', async () => {
    const port = await freePort();
    const service = startPiped(baseEnv(port, 'json'));
    try {
      const start = JSON.parse(await service.until((l) => l.includes('tabwire is listening'))) as Record<string, unknown>;
      expect(start).toMatchObject({ level: 30, demo: `http://127.0.0.1:${port}/`, docs: `http://127.0.0.1:${port}/docs`, oidcIssuer: `http://127.0.0.1:${port}/oidc` });
      expect(start.msg).toBe(`tabwire is listening: open http://127.0.0.1:${port}/ for the demo, http://127.0.0.1:${port}/docs for the API reference; OpenID Provider issuer http://127.0.0.1:${port}/oidc`);
      // The start line is the first line: no Fastify "Server listening", no embedded node's lease lines before it.
      expect(service.lines[0]).toContain('tabwire is listening');
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const access = JSON.parse(await service.until((l) => l.includes('/healthz'))) as { req: { method: string; url: string }; res: { statusCode: number } };
      expect(access).toMatchObject({ msg: 'request completed', req: { method: 'GET', url: '/healthz' }, res: { statusCode: 200 } });
      // Every line is one JSON object: a log shipper never meets a line it cannot parse.
      for (const line of service.lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    } finally {
      await kill(service.child);
    }
  });

  it('TABWIRE_LOG_FORMAT=pretty gives readable lines even into a pipe: the start line, access lines as "GET /path 200 … ms"', async () => {
    const port = await freePort();
    const service = startPiped({ ...baseEnv(port, 'pretty'), TABWIRE_LOG_FORMAT: 'pretty', NO_COLOR: '1' });
    try {
      const start = await service.until((l) => l.includes('tabwire is listening'));
      expect(start).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: tabwire is listening: open http:\/\/127\.0\.0\.1:\d+\/ for the demo, http:\/\/127\.0\.0\.1:\d+\/docs for the API reference/);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      expect(await service.until((l) => l.includes('/healthz'))).toMatch(/INFO: GET \/healthz 200 \d+\.\d ms$/);
      expect(() => JSON.parse(start) as unknown).toThrow();
      // NO_COLOR: no escape sequences in the lines.
      expect(service.lines.join('\n')).not.toContain('\u001b[');
    } finally {
      await kill(service.child);
    }
  });

  it.skipIf(!existsSync(SCRIPT))('a terminal gets readable lines without being told', async () => {
    const port = await freePort();
    const service = startPiped(baseEnv(port, 'terminal'), true);
    try {
      const start = await service.until((l) => l.includes('tabwire is listening'));
      expect(start).toContain(`open http://127.0.0.1:${port}/ for the demo, http://127.0.0.1:${port}/docs for the API reference`);
      expect(start).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] /);
      expect(start.trimStart().startsWith('{')).toBe(false);
    } finally {
      await kill(service.child, 'SIGTERM');
    }
  });
});
