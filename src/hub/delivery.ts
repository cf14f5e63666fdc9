import { createHash, randomBytes } from 'node:crypto';
import type { DeliveryFallback } from '../broker/broker.js';
import type { TabEvent } from '../protocol/frames.js';
import type { TabAddress } from '../protocol/address.js';

/**
 * The one way domain code reaches a browser (docs/events.md): an event for a tab of a session. It
 * never reaches another session, even one that holds the same tab id later.
 */
export interface Delivery {
  /**
   * Resolves true once the event is in the tab's stream (it was published now, or before under the same
   * `key`), false when it was held for another try (the broker unreachable) or handed to the fallback.
   * `key` names the event for de-duplication (broker.ts `publish`): the same key never makes a second
   * copy while the first is in the stream. Without one, a key is made for this call, so this call's own
   * retries are still de-duplicated. `onTakenLater` is called once if an event that was held (false) is put
   * in the stream by a later try; an event offered again under a key already held is not held twice.
   */
  deliver(to: TabAddress, event: TabEvent, fallback?: DeliveryFallback, key?: string, onTakenLater?: () => void): Promise<boolean>;
}

/** A publish key of its own for an event that has none (broker.ts `publish`): 22 characters of base64url. */
export const newPublishKey = (): string => randomBytes(16).toString('base64url');

/**
 * The publish key of the event a settled code sends its tab: derived from the code, so the node that
 * settled it, a node that republishes it from the settlement row (the result outbox), a repeated
 * signature and a replay all publish it under one key, and the tab's stream keeps one copy with one id
 * (docs/events.md "Results reach the page once"). A hash, so the code itself is not written into the
 * broker.
 */
export const resultPublishKey = (code: string): string => `r${createHash('sha256').update(code).digest('base64url').slice(0, 32)}`;

/** Whether a publish key is a result's (`resultPublishKey`; `newPublishKey`'s are 22 characters). */
export const isResultPublishKey = (key: string): boolean => /^r[\w-]{32}$/.test(key);
