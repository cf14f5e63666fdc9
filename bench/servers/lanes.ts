/**
 * Bounded concurrency for the load children's setup (opening many tabs): `concurrency` lanes, each taking
 * the next number when its previous one is done.
 */

/** Runs `each(n)` for every n in [from, to), at most `concurrency` (at least 1) at a time. */
export async function lanes(from: number, to: number, concurrency: number, each: (n: number) => Promise<void>): Promise<void> {
  let next = from;
  const lane = async (): Promise<void> => {
    while (next < to) await each(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
}
