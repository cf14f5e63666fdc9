/**
 * One area of the service as `createServices` wires it: what it made, and how its background work
 * starts and stops. Areas start in the order they are made and stop in the reverse order.
 */
export interface Lifecycle {
  /** Starts timers, outboxes and connections; never awaited (the service serves while they come up). */
  start(): void;
  /** Stops what `start` started; closes what the area opened. */
  stop(): Promise<void>;
}

/** Intervals that run while an area runs (unref'd: they never keep the process alive). */
export function intervals(...entries: [() => void, number][]): Lifecycle {
  let timers: NodeJS.Timeout[] = [];
  return {
    start() {
      timers = entries.map(([run, ms]) => setInterval(run, ms));
      for (const t of timers) t.unref();
    },
    async stop() {
      for (const t of timers) clearInterval(t);
      timers = [];
    },
  };
}
