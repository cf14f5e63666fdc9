/** Percentile (0..100) of an unsorted sample; NaN for an empty one. Sorts a copy. */
export function percentile(sample: ArrayLike<number>, p: number): number {
  if (sample.length === 0) return Number.NaN;
  const sorted = Float64Array.from(sample).sort();
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/** The median of a sample (the mean of the middle two for an even count). Sorts a copy. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Rounds a rate for display: integers above 100, one decimal below. */
export function formatRate(rate: number): string {
  if (!Number.isFinite(rate)) return 'n/a';
  return rate >= 100 ? Math.round(rate).toLocaleString('en-US') : rate.toFixed(1);
}

export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${(ratio * 100).toFixed(0)}%` : 'n/a';
}

export function formatMicros(micros: number | undefined): string {
  return micros === undefined || !Number.isFinite(micros) ? '' : micros >= 100 ? `${Math.round(micros)}` : micros.toFixed(1);
}

/** Monospace table: first column left-aligned, the rest right-aligned. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
}
