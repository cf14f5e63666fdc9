import type { Config } from '../config/schema.js';
import type { Store } from '../store/stores.js';
import type { PurgeTask } from './purge.js';

/** How long each kind of data outlives its end, in milliseconds (docs/configuration.md "Retention"). */
export interface RetentionWindows {
  codes: number;
  registrations: number;
  callbacks: number;
}

/**
 * The windows from configuration, raised where other features still need the rows: an approved
 * code serves its result's attachments for attachmentUrlSeconds after the signature (which comes at
 * the latest at expiry), and a code issued just before its registration expired may be signed up to
 * codeValiditySeconds later, when its callback needs the registration.
 */
export function retentionWindows(config: Config): RetentionWindows {
  return {
    codes: Math.max(config.codeRetentionSeconds, config.attachmentUrlSeconds) * 1000,
    registrations: Math.max(config.registrationRetentionSeconds, config.codeValiditySeconds) * 1000,
    callbacks: config.callbackRetentionSeconds * 1000,
  };
}

/**
 * The store's purge tasks: expired codes, expired registrations, callbacks whose retry window ended, and the
 * OpenID Provider's expired records.
 */
export function storeRetentionTasks(store: Store, windows: RetentionWindows): PurgeTask[] {
  return [
    { kind: 'codes', run: (now) => store.codes.deleteExpired(now - windows.codes) },
    // A request row outlives every code derived from it (quicklogin/qr-requests.ts); a minute more for nodes' clocks.
    { kind: 'qr_requests', run: (now) => store.qrRequests.deleteExpired(now - 60_000) },
    // Each key expires with the replay window it was kept for (wiring/events.ts, at a stop).
    { kind: 'written_results', run: (now) => store.writtenResults.deleteExpired(now) },
    { kind: 'registrations', run: (now) => store.services.deleteExpired(now - windows.registrations) },
    // Bodies hold identity properties and AgentApiTokens: they go whatever the callback's state.
    { kind: 'callbacks', run: (now) => store.callbacks.deleteEnded(now - windows.callbacks) },
    // No window: an expired OpenID Provider record is invisible to every reader already (a code, a token or a
    // session past its expiry is refused as if unknown), so nothing can need it.
    { kind: 'oidc', run: (now) => store.oidcEntries.deleteExpired(now) },
  ];
}
