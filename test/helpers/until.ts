/**
 * Polls `condition` until it holds. The deadline only bounds a broken run (it is not a claim about
 * how fast anything is), so it is generous: a slow or loaded machine waits longer, never fails.
 */
export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
