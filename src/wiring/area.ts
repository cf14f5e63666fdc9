import type { FastifyInstance } from 'fastify';
import type { RequestLimits } from '../http/request-limits.js';
import type { CookiePolicy } from '../http/session.js';

/**
 * One area of the service as `assembleNode` (wiring/node.ts) wires it: what it made, and how its background
 * work starts and stops. Areas start in the order they are made and stop in the reverse order.
 */
export interface Lifecycle {
  /** Starts timers, outboxes and connections; never awaited (the service serves while they come up). */
  start(): void;
  /** Stops what `start` started; closes what the area opened. */
  stop(): Promise<void>;
}

/** What buildApp gives each area's routes: the server, with its cross-cutting hooks in place, and the HTTP parts shared by areas. */
export interface RouteContext {
  app: FastifyInstance;
  /** The session cookie's attributes (http/session.ts). */
  cookies: CookiePolicy;
  /** The request rate limits of POST /QuickLogin (docs/configuration.md "Limits"). */
  limits: RequestLimits;
}

/** An area that serves HTTP: it registers its own route modules, each given only what it uses. */
export interface Area extends Lifecycle {
  registerRoutes(http: RouteContext): Promise<void>;
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
