import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDocumentedService } from '../helpers/openapi-service.js';
import type { TestService } from '../helpers/service.js';

/**
 * The OpenAPI document passes Redocly's recommended rules with no error (docs/openapi.md "Lint"), and every
 * warning it still gives is one docs/openapi.md lists and explains.
 */

let service: TestService;
let doc: Record<string, any>;
const dir = mkdtempSync(join(tmpdir(), 'tabwire-openapi-lint-'));

beforeAll(async () => {
  ({ service, doc } = await startDocumentedService());
});
afterAll(async () => {
  await service?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

describe('@redocly/cli lint (recommended)', () => {
  it('finds no error; each warning is one docs/openapi.md explains', { timeout: 120_000 }, async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    // No telemetry and no update check: the lint runs offline.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const run = await promisify(execFile)(process.execPath, ['node_modules/@redocly/cli/bin/cli.js', 'lint', file, '--format=json', '--max-problems=1000'], { env, maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: { stdout: string; stderr: string }) => error,
    );
    const report = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: LintProblem[] };
    const errors = report.problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId} ${p.location[0]?.pointer ?? ''}: ${p.message}`)).toEqual([]);
    expect(report.totals.errors).toBe(0);
    const lintSection = readFileSync('docs/openapi.md', 'utf8').split('## Lint')[1]!.split('\n## ')[0]!;
    const warned = [...new Set(report.problems.map((p) => p.ruleId))];
    expect(warned.filter((rule) => !lintSection.includes(`\`${rule}\``))).toEqual([]);
  });

  it('every operation has an operationId (unique) and declares its security', () => {
    const ids: string[] = [];
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const operation of Object.values(item)) {
        if (typeof operation !== 'object' || operation === null || !('responses' in operation)) continue;
        expect(operation.operationId).toMatch(/^[a-z][A-Za-z0-9]+$/);
        expect(Array.isArray(operation.security)).toBe(true);
        ids.push(operation.operationId);
      }
    }
    expect(ids.length).toBeGreaterThan(30);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/QuickLogin/Sign/{code}'].post.operationId).toBe('postQuickLoginSignCode');
    expect(Object.keys(doc.paths).filter((path) => path !== '/' && path.endsWith('/'))).toEqual([]);
  });
});
