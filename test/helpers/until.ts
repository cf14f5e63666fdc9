/**
 * How long a test waits for something that must happen. It only bounds a broken run, so it is set for the
 * slowest machine the suite runs on (2 loaded cores, a cold Node.js line), far above what a healthy run needs.
 */
export const DEADLINE_MS = 60_000;

/**
 * Polls `condition` until it holds. The deadline only bounds a broken run (it is not a claim about
 * how fast anything is), so it is generous: a slow or loaded machine waits longer, never fails.
 */
export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
