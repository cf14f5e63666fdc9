import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import type { QuickLoginResult } from '../protocol/events.js';
import type { BackendMode } from '../quicklogin/quicklogin.js';
import type { Callback, LoginCode, ServiceRegistrationStore } from '../store/stores.js';
import type { CallbackDeliverer } from './deliverer.js';
import type { BackendRegistrations } from './registrations.js';

/**
 * Backend mode as QuickLogin sees it: serviceId checks and the callback for an approved code.
 * The callback body is the `SignatureReceived` result plus `SessionId` and `ServiceId`.
 */
export function backendMode(o: {
  registrations: BackendRegistrations;
  services: ServiceRegistrationStore;
  deliverer: CallbackDeliverer;
  clock: Clock;
  /** How long a callback is retried after the signature. */
  retryWindowMs: number;
}): BackendMode {
  return {
    async check(serviceId) {
      return (await o.registrations.current(serviceId)).expiresAt;
    },
    async prepare(record: LoginCode, result: QuickLoginResult): Promise<Callback> {
      // The registration was valid when the code was issued; its callback still gets the result
      // even if the registration lapsed since (the person signed in time).
      const registration = await o.services.get(record.serviceId);
      if (!registration) throw new TabwireError('service_not_registered', `serviceId "${record.serviceId}" is not registered`);
      const now = o.clock.now();
      return {
        id: `msg_${record.code}`,
        serviceId: registration.serviceId,
        tabId: record.tabId,
        tabSession: record.tabId === '' ? null : record.sessionHash,
        url: registration.callbackUrl,
        body: JSON.stringify({ ...result, SessionId: registration.sessionId, ServiceId: registration.serviceId }),
        webhookSecret: registration.webhookSecret,
        state: 'pending',
        attempts: 0,
        nextAttemptAt: now,
        deadline: now + o.retryWindowMs,
        lastError: null,
        createdAt: now,
        deliveredAt: null,
      };
    },
    settleWith(callback, settle) {
      return o.deliverer.storeAndAttempt(callback, settle);
    },
  };
}
