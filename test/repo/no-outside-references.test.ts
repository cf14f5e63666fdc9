import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands alone: everything a user needs is in it (docs/protocol.md and the rest of
 * docs/). No file may point to notes kept outside it, or to paths of the machine it was written on.
 * The patterns are built from parts so that this file does not match itself.
 */
const OUTSIDE_REFERENCES: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: 'team notes outside the repository', pattern: new RegExp(`\\b(?:${['SPEC', 'ARCHITECTURE', 'REFERENCE-CLIENTS', 'STYLE'].join('|')})\\.md\\b`) },
  { name: 'a folder beside the repository', pattern: new RegExp(['\\.\\.', 'shared\\b'].join('/')) },
  { name: 'an absolute path of the machine it was written on', pattern: new RegExp(['', 'work', ''].join('/')) },
];

interface OutsideReference {
  file: string;
  line: number;
  what: string;
  text: string;
}

/** Every line of `text` that refers to something outside the repository. */
function findOutsideReferences(file: string, text: string): OutsideReference[] {
  const found: OutsideReference[] = [];
  text.split('\n').forEach((lineText, index) => {
    for (const { name, pattern } of OUTSIDE_REFERENCES) {
      if (pattern.test(lineText)) found.push({ file, line: index + 1, what: name, text: lineText.trim().slice(0, 160) });
    }
  });
  return found;
}

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** Tracked files, and new files not ignored yet (so a reference is caught before it is committed). */
function repositoryFiles(): string[] | undefined {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return [...new Set(out.split('\0').filter((f) => f !== ''))];
  } catch {
    return undefined; // not a git checkout (an unpacked tarball): nothing to list
  }
}

const files = repositoryFiles();

describe('no file refers to a file outside the repository', () => {
  it('the scanner finds each kind of outside reference, with its line', () => {
    const sample = ['fine line', `see ${'SPEC'}.md §3`, `notes in ../${'shared'}/x`, `open /${'work'}/main/README`, 'docs/protocol.md is inside'].join('\n');
    const found = findOutsideReferences('sample.md', sample);
    expect(found.map((f) => [f.line, f.what])).toEqual([
      [2, 'team notes outside the repository'],
      [3, 'a folder beside the repository'],
      [4, 'an absolute path of the machine it was written on'],
    ]);
  });

  it.skipIf(files === undefined)('in any tracked or new file', () => {
    const self = relative(root, fileURLToPath(import.meta.url));
    const found: OutsideReference[] = [];
    for (const file of files ?? []) {
      if (file === self) continue;
      let content: Buffer;
      try {
        content = readFileSync(join(root, file));
      } catch {
        continue; // listed but deleted in the working tree
      }
      if (content.includes(0)) continue; // binary (images)
      found.push(...findOutsideReferences(file, content.toString('utf8')));
    }
    expect(files?.length ?? 0).toBeGreaterThan(50);
    const report = found.map((f) => `${f.file}:${f.line}: ${f.what}: ${f.text}`).join('\n');
    expect(report, `files refer to something outside the repository:\n${report}`).toBe('');
  });
});
