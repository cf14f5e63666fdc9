/**
 * `tabwire/client`: the event client as an ES module, for pages that bundle their own code.
 * `/Events.js` (global.ts) is this same client installed as `window.Events`.
 */
import { bindPageLifecycle, browserDeps, type EventClientOptions } from './browser-env.js';
import { EventClient } from './client.js';
import { eventsApi, type EventsApi } from './events-api.js';

/**
 * A new event client for this page. It does not connect until `connect()`. Run one per page:
 * two clients share the tab ID and the service would let each replace the other (close 4409).
 */
export function createEventClient(options: EventClientOptions = {}): EventsApi {
  const events = eventsApi(new EventClient(browserDeps(options)));
  if (options.pageLifecycle !== false && typeof window !== 'undefined') bindPageLifecycle(window, events);
  return events;
}

export { EventTypes, type QuickLoginRejection, type QuickLoginResult, type ResultAttachment } from '../protocol/events.js';
export type { BackoffOptions } from './backoff.js';
export type { EventClientOptions } from './browser-env.js';
export type { EventStats } from './client.js';
export type { DispatchStats, EventHandler, ReceivedEvent } from './dispatcher.js';
export type { EventsApi } from './events-api.js';
export {
  DEFAULT_REFRESH_MS,
  QuickLoginError,
  qrImageSource,
  startQuickLogin,
  type QrCode,
  type QrFetch,
  type QrMode,
  type QrResponseLike,
  type QuickLoginEvents,
  type QuickLoginOptions,
  type QuickLoginSession,
} from './quick-login.js';
export type { EventHost } from './host.js';
export type { FetchLike, Logger, PollRequest, ResponseLike, SocketFactory, SocketLike, Timers } from './platform.js';
export { windowNameStore, type TabIdStore } from './tab-id.js';
