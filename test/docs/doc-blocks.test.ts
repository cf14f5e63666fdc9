import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allBlocks, RUNNABLE, type DocBlock } from './doc-blocks.js';

/**
 * No command or snippet in README.md and docs/*.md escapes the suite: each block a reader is told to run is
 * run by a named test (which takes its text from the document) or says why not. README.md "Tests" describes
 * the marks.
 */

const blocks = allBlocks();
const where = (b: DocBlock) => `${b.doc}:${b.line}`;

/** First lines of a block that show a command even without a ```sh info string. */
const LOOKS_LIKE_A_COMMAND = /^(\$ |npm |npx |node |\.\/|scripts\/|curl |sudo |git |systemctl )/;

describe('runnable blocks in the documents', () => {
  it('finds the documents and their blocks', () => {
    expect(new Set(blocks.map((b) => b.doc))).toContain('docs/cli.md');
    expect(blocks.filter((b) => RUNNABLE.has(b.lang)).length).toBeGreaterThan(20);
  });

  it('every ```sh, js, http or html block is marked "run by the suite: <test> as <name>" or "not run by the suite: <reason>"', () => {
    const unmarked = blocks.filter((b) => RUNNABLE.has(b.lang) && b.mark === undefined).map(where);
    expect(unmarked, 'put <!-- run by the suite: test/…test.ts as NAME --> or <!-- not run by the suite: REASON --> on the line above').toEqual([]);
  });

  it('a reason not to run a block is a sentence, not a placeholder', () => {
    const thin = blocks.filter((b) => b.mark && 'notRun' in b.mark && (b.mark.notRun.split(/\s+/).length < 4 || /^(todo|tbd|reason)\b/i.test(b.mark.notRun)));
    expect(thin.map(where)).toEqual([]);
  });

  it('each block marked as run names a test file that exists and takes its blocks from the documents', () => {
    const runners = new Set(blocks.flatMap((b) => (b.mark && 'runBy' in b.mark ? [b.mark.runBy] : [])));
    expect(runners.size).toBeGreaterThan(0);
    for (const file of runners) {
      expect(existsSync(file), file).toBe(true);
      expect(readFileSync(file, 'utf8'), `${file} should call blocksRunBy('${file}')`).toContain(`blocksRunBy('${file}')`);
    }
  });

  it('a block without an info string is not a command in disguise (commands are ```sh)', () => {
    const disguised = blocks.filter((b) => b.lang === '' && b.text.split('\n').some((line) => LOOKS_LIKE_A_COMMAND.test(line)));
    expect(disguised.map(where)).toEqual([]);
  });
});
