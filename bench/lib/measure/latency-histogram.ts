/**
 * A latency histogram with 10 µs buckets up to 2 s (exact values above), cheap to record into and
 * to ship between processes as sparse pairs: the waiting-people load processes record hundreds of
 * thousands of requests per window, and their histograms are merged in the parent for one p99.
 */
const BUCKET_MS = 0.01;
const BUCKETS = 200_000;

/** What crosses IPC: [bucket, count] pairs plus the values beyond the last bucket. */
export interface HistogramData {
  buckets: [number, number][];
  overflow: number[];
}

export class LatencyHistogram {
  private counts = new Uint32Array(BUCKETS);
  private overflow: number[] = [];
  count = 0;

  record(ms: number): void {
    this.count++;
    const bucket = Math.floor(Math.max(0, ms) / BUCKET_MS);
    if (bucket < BUCKETS) this.counts[bucket]!++;
    else this.overflow.push(ms);
  }

  reset(): void {
    this.counts.fill(0);
    this.overflow = [];
    this.count = 0;
  }

  data(): HistogramData {
    const buckets: [number, number][] = [];
    for (let i = 0; i < BUCKETS; i++) if (this.counts[i]! > 0) buckets.push([i, this.counts[i]!]);
    return { buckets, overflow: [...this.overflow] };
  }
}

/** Percentiles (0..100) of merged histograms, in ms (a bucket's upper edge: never optimistic). */
export function summarise(parts: HistogramData[], ps: number[]): { count: number; values: number[]; max: number } {
  const merged = new Map<number, number>();
  const overflow: number[] = [];
  for (const part of parts) {
    for (const [bucket, n] of part.buckets) merged.set(bucket, (merged.get(bucket) ?? 0) + n);
    overflow.push(...part.overflow);
  }
  overflow.sort((a, b) => a - b);
  const sorted = [...merged.entries()].sort((a, b) => a[0] - b[0]);
  const count = sorted.reduce((s, [, n]) => s + n, 0) + overflow.length;
  const at = (p: number): number => {
    if (count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * count));
    let seen = 0;
    for (const [bucket, n] of sorted) {
      seen += n;
      if (seen >= rank) return (bucket + 1) * BUCKET_MS;
    }
    return overflow[rank - seen - 1] ?? overflow[overflow.length - 1] ?? Number.NaN;
  };
  const lastBucket = sorted.length > 0 ? (sorted[sorted.length - 1]![0] + 1) * BUCKET_MS : Number.NaN;
  const max = overflow.length > 0 ? overflow[overflow.length - 1]! : lastBucket;
  return { count, values: ps.map(at), max };
}
