import type { Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { referenceState, type ReferenceState } from './reference-page.js';

/**
 * Polls a page's recorded state until `done` holds, or until an alert was shown (which ends the
 * wait early: the reference scripts alert on the errors these tests are about). The deadline only
 * bounds a broken run; it is not a claim about speed. Returns the last state seen.
 */
export async function pageSettles(
  page: Page,
  dialogs: readonly string[],
  done: (state: ReferenceState) => boolean,
  what: string,
  ms = 20_000,
): Promise<ReferenceState> {
  const deadline = Date.now() + ms;
  for (;;) {
    const state = await referenceState(page);
    if (done(state) || dialogs.length > 0) return state;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}; page state: ${JSON.stringify(state.ref)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many pixels of each colour (`rrggbb`, fully opaque pixels only) a PNG has. */
export function colourCounts(png: Buffer): Map<string, number> {
  const image = PNG.sync.read(png);
  const counts = new Map<string, number>();
  for (let i = 0; i < image.data.length; i += 4) {
    if (image.data[i + 3] !== 255) continue;
    const hex = [image.data[i]!, image.data[i + 1]!, image.data[i + 2]!].map((v) => v.toString(16).padStart(2, '0')).join('');
    counts.set(hex, (counts.get(hex) ?? 0) + 1);
  }
  return counts;
}

/** The `n` most frequent colours, most frequent first. */
export const dominantColours = (png: Buffer, n = 2): string[] =>
  [...colourCounts(png).entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([hex]) => hex);

/** Whether two `rrggbb` colours differ by at most `tolerance` per channel (screenshots may round). */
export function closeColour(a: string, b: string, tolerance = 3): boolean {
  for (let i = 0; i < 6; i += 2) if (Math.abs(parseInt(a.slice(i, i + 2), 16) - parseInt(b.slice(i, i + 2), 16)) > tolerance) return false;
  return true;
}
