import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { missingOneCoreFlags, missingServiceFlags, ONE_CORE_NODE_FLAGS, SERVICE_NODE_FLAGS } from '../../src/node-flags.js';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the Node.js flags the service is started with (docs/deployment.md "Node.js flags")', () => {
  it('this Node accepts every one of them, the one-core flags included', () => {
    const run = spawnSync(process.execPath, [...SERVICE_NODE_FLAGS, ...ONE_CORE_NODE_FLAGS, '-e', 'process.stdout.write(JSON.stringify(process.execArgv))'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(expect.arrayContaining([...SERVICE_NODE_FLAGS, ...ONE_CORE_NODE_FLAGS]));
  });

  it('every way the project starts the service passes them: npm start, scripts/cluster, the systemd units', () => {
    const starts = [
      (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start,
      ...read('scripts/cluster').replace(/\\\n\s*/g, ' ').split('\n').filter((line) => line.includes('dist/main.js') && line.includes('launch')),
      ...read('deploy/tabwire.service').split('\n').filter((line) => line.startsWith('ExecStart=')),
      ...read('docs/deployment.md').split('\n').filter((line) => line.startsWith('ExecStart=')),
    ];
    expect(starts.length).toBeGreaterThanOrEqual(5);
    for (const start of starts) {
      expect(start).toMatch(/dist\/main\.js/);
      for (const flag of SERVICE_NODE_FLAGS) expect(start.split(/\s+/)).toContain(flag);
    }
  });

  it('tells which flags a process was started without', () => {
    expect(missingServiceFlags([])).toEqual([...SERVICE_NODE_FLAGS]);
    expect(missingServiceFlags([...SERVICE_NODE_FLAGS, '--inspect'])).toEqual([]);
  });

  it('asks for the one-core flags only of a process confined to one core', () => {
    expect(missingOneCoreFlags(1, [...SERVICE_NODE_FLAGS])).toEqual(['--single-threaded-gc']);
    expect(missingOneCoreFlags(1, [...SERVICE_NODE_FLAGS, '--single-threaded-gc'])).toEqual([]);
    expect(missingOneCoreFlags(2, [])).toEqual([]);
  });
});
