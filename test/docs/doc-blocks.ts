import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The fenced blocks of the project's Markdown, with the mark that says who runs them. A block a reader is told
 * to run (a shell command, a JavaScript/HTTP/HTML snippet) is preceded by one HTML comment, on the line just
 * above its fence:
 *
 *   <!-- run by the suite: test/docs/doc-commands.test.ts as cli-login -->
 *   <!-- not run by the suite: <the real reason> -->
 *
 * The test file named in the first form takes the block's text from here (blocksRunBy), so the document and
 * what is run cannot drift apart; test/docs/doc-blocks.test.ts fails on a runnable block with neither mark.
 */

export interface DocBlock {
  /** The document, relative to the repository root (README.md, docs/cli.md). */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string ('' for none): sh, js, http ... */
  lang: string;
  /** The block's content, its indentation removed, ending in a newline. */
  text: string;
  /** Who runs it, from the comment above the fence. */
  mark: { runBy: string; name: string } | { notRun: string } | undefined;
}

/** Info strings of blocks a reader runs: commands and code snippets (config files and output are not). */
export const RUNNABLE = new Set(['sh', 'bash', 'shell', 'console', 'js', 'javascript', 'mjs', 'ts', 'typescript', 'http', 'html']);

/** The documents whose blocks the suite accounts for. */
export function documents(root = process.cwd()): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

const RUN_BY = /^<!--\s*run by the suite:\s*(\S+\.test\.ts)\s+as\s+([\w.-]+)\s*-->$/;
const NOT_RUN = /^<!--\s*not run by the suite:\s*([\s\S]*?)\s*-->$/;

/** Every fenced block of one document (``` or ~~~ fences, indented ones in lists too). */
export function blocksOf(doc: string, root = process.cwd()): DocBlock[] {
  const lines = readFileSync(join(root, doc), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w.+-]*)/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang] = open as unknown as [string, string, string, string];
    const body: string[] = [];
    let j = i + 1;
    // CommonMark: the closing fence is at least as long as the opening one, of the same character.
    while (j < lines.length && !new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`).test(lines[j]!)) {
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!.trimStart());
      j++;
    }
    blocks.push({ doc, line: i + 1, lang: lang.toLowerCase(), text: body.join('\n') + '\n', mark: markAbove(lines, i) });
    i = j;
  }
  return blocks;
}

/** The comment on the last non-blank line above the fence (a comment may span lines). */
function markAbove(lines: string[], fenceIndex: number): DocBlock['mark'] {
  let end = fenceIndex - 1;
  while (end >= 0 && lines[end]!.trim() === '') end--;
  if (end < 0 || !lines[end]!.trim().endsWith('-->')) return undefined;
  let start = end;
  while (start > 0 && !lines[start]!.includes('<!--')) start--;
  const comment = lines
    .slice(start, end + 1)
    .map((l) => l.trim())
    .join(' ');
  const runBy = RUN_BY.exec(comment);
  if (runBy) return { runBy: runBy[1]!, name: runBy[2]! };
  const notRun = NOT_RUN.exec(comment);
  return notRun ? { notRun: notRun[1]! } : undefined;
}

/** Every block of every document. */
export function allBlocks(root = process.cwd()): DocBlock[] {
  return documents(root).flatMap((doc) => blocksOf(doc, root));
}

/** The blocks marked as run by `testFile`, by name (the name is unique within that file's blocks). */
export function blocksRunBy(testFile: string, root = process.cwd()): Map<string, DocBlock> {
  const found = new Map<string, DocBlock>();
  for (const block of allBlocks(root)) {
    if (block.mark === undefined || !('runBy' in block.mark) || block.mark.runBy !== testFile) continue;
    if (found.has(block.mark.name)) throw new Error(`${block.doc}:${block.line}: a second block named ${block.mark.name} for ${testFile}`);
    found.set(block.mark.name, block);
  }
  return found;
}

/** The block called `name` among those `testFile` runs; throws when the documents have none. */
export function blockNamed(blocks: Map<string, DocBlock>, name: string): DocBlock {
  const block = blocks.get(name);
  if (!block) throw new Error(`no block marked "as ${name}" in the documents (marked: ${[...blocks.keys()].join(', ')})`);
  return block;
}
