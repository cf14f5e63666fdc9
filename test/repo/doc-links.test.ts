import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The documentation links to itself a lot (docs/protocol.md points at the section of each page that holds a
 * decision): every relative link in a Markdown file must reach a file of the repository, and every
 * `#anchor` a heading of the page it names, as GitHub renders them.
 */
const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..');

/** GitHub's heading anchors: lower case, punctuation dropped (but `-` and `_`), spaces to `-`, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Inline links `[text](target)` outside code fences and code spans. */
function linksOf(markdown: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  let fenced = false;
  markdown.split('\n').forEach((text, index) => {
    if (text.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    const prose = text.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)\)/g)) links.push({ line: index + 1, target: match[1]! });
  });
  return links;
}

/** What is wrong with one link of `file`, or undefined when it resolves. */
function brokenLink(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...: not checked here
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
  const absolute = join(root, resolved);
  if (resolved.startsWith('..') || !existsSync(absolute)) return `${target}: no file ${resolved}`;
  if (anchor === undefined || anchor === '' || statSync(absolute).isDirectory() || !resolved.endsWith('.md')) return undefined;
  return anchorsOf(readFileSync(absolute, 'utf8')).has(anchor) ? undefined : `${target}: no heading #${anchor} in ${resolved}`;
}

function markdownFiles(): string[] | undefined {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '*.md'], { cwd: root, encoding: 'utf8' });
    return out.split('\0').filter((f) => f !== '' && existsSync(join(root, f)));
  } catch {
    return undefined; // not a git checkout
  }
}

const files = markdownFiles();

/** Code that cites a section of a page as `docs/<page>.md#<anchor>` (in comments, mostly). */
function codeFiles(): string[] | undefined {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', 'src', 'bench', 'test', 'scripts'], { cwd: root, encoding: 'utf8' });
    return out.split('\0').filter((f) => /\.(ts|mts|js|mjs)$/.test(f) && existsSync(join(root, f)));
  } catch {
    return undefined; // not a git checkout
  }
}

const code = codeFiles();
/** The benchmarks' lab notebook: figures as measured then, which no decision in src/ may rest on. */
const HISTORY_PAGE = 'docs/benchmarks-history.md';

describe('links between the documents', () => {
  it('anchors are made as GitHub makes them', () => {
    const anchors = anchorsOf('# Signing: the `signUrl`\n## The result (`SignatureReceived.data`)\n## Limits\n## Limits\n```\n# not a heading\n```');
    expect([...anchors]).toEqual(['signing-the-signurl', 'the-result-signaturereceiveddata', 'limits', 'limits-1']);
    expect(linksOf('see [a](b.md#c) and `[x](not-a-link)`\n```\n[y](z)\n```').map((l) => l.target)).toEqual(['b.md#c']);
  });

  it.skipIf(files === undefined)('every relative link reaches a file, and every anchor a heading', () => {
    const broken: string[] = [];
    for (const file of files ?? []) {
      for (const { line, target } of linksOf(readFileSync(join(root, file), 'utf8'))) {
        const problem = brokenLink(file, target);
        if (problem !== undefined) broken.push(`${file}:${line}: ${problem}`);
      }
    }
    expect(files).toContain('docs/protocol.md');
    expect(broken.join('\n'), `broken links:\n${broken.join('\n')}`).toBe('');
  });

  it.skipIf(code === undefined)('every docs/<page>.md#<anchor> cited in the code reaches a heading, and src/ cites no history page', () => {
    const self = relative(root, fileURLToPath(import.meta.url));
    const broken: string[] = [];
    let cited = 0;
    for (const file of code ?? []) {
      if (file === self) continue;
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .forEach((text, index) => {
          for (const match of text.matchAll(/\bdocs\/([\w.-]+\.md)#([\w-]+)/g)) {
            cited++;
            const problem = brokenLink('README.md', `docs/${match[1]!}#${match[2]!}`);
            if (problem !== undefined) broken.push(`${file}:${index + 1}: ${problem}`);
          }
          if (file.startsWith('src/') && text.includes(HISTORY_PAGE)) broken.push(`${file}:${index + 1}: cites ${HISTORY_PAGE}; cite the decision in docs/benchmarks.md`);
        });
    }
    expect(cited).toBeGreaterThan(20);
    expect(broken.join('\n'), `broken citations:\n${broken.join('\n')}`).toBe('');
  });
});
