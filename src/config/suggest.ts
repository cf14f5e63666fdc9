/**
 * "Did you mean" for configuration names (docs/configuration.md "Unknown names"). A setting spelt
 * slightly wrong (TABWIRE_DATABSE_URL, TABWIRE_PUBLIC_BASEURL) would otherwise be refused as unknown
 * with no hint, or, worse, look right to the person who typed it.
 */

/**
 * Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
 * neighbouring characters each cost 1 (Damerau–Levenshtein without repeated edits of one substring).
 */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i]!;
    const above = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
    }
  }
  return rows[a.length]![b.length]!;
}

/** Case and word separators do not count: PUBLIC_BASEURL, publicBaseUrl and PUBLIC_BASE_URL are one name. */
const normalize = (name: string): string => name.toUpperCase().replace(/[_-]/g, '');

/**
 * The known name closest to `name`, when it is close enough to be a slip of the keyboard: at most
 * 1 edit for names up to 5 characters, 2 up to 10, 3 beyond (after `prefix`, which every candidate
 * shares, and ignoring case and underscores). Undefined when nothing is that close, or when two
 * names are equally close (a guess between them would mislead).
 */
export function closestName(name: string, known: Iterable<string>, prefix = ''): string | undefined {
  const strip = (s: string) => normalize(s.startsWith(prefix) ? s.slice(prefix.length) : s);
  const target = strip(name);
  const allowed = target.length <= 5 ? 1 : target.length <= 10 ? 2 : 3;
  let best: string | undefined;
  let bestDistance = Infinity;
  let tie = false;
  for (const candidate of known) {
    const distance = editDistance(target, strip(candidate));
    if (distance < bestDistance) {
      [best, bestDistance, tie] = [candidate, distance, false];
    } else if (distance === bestDistance) tie = true;
  }
  return bestDistance <= allowed && !tie ? best : undefined;
}
