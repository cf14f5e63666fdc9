/**
 * What a `list` command prints: a header line and one tab-separated line per row, or `none` when there
 * is nothing, so an empty answer is told apart from a command that printed nothing (docs/cli.md).
 */
export function listOutput(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  if (rows.length === 0) return 'none\n';
  return [header, ...rows].map((cells) => `${cells.join('\t')}\n`).join('');
}
