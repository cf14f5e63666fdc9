import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import type { ServiceRegistration, ServiceRegistrationStore } from '../store/stores.js';
import { checkCallbackUrl, checkResolvedHost, type CallbackPolicy, type Resolver } from './address-policy.js';

export interface RegistrationRequest {
  service: string;
  sessionId: string;
  serviceId?: string;
  webhookSecret?: string;
}

/** What registrations call: their store, time, and the DNS resolver the callback address is checked with. */
export interface RegistrationsDeps {
  store: ServiceRegistrationStore;
  clock: Clock;
  resolve: Resolver;
}

/** How long a registration is valid, and which callback addresses are allowed (from the configuration). */
export interface RegistrationsSettings {
  validityMs: number;
  policy: CallbackPolicy;
}

/**
 * Backend callback registrations (docs/backend.md "Register (and renew) the callback"): register, renew (restarts
 * the validity), and the check a QR request naming a serviceId goes through.
 */
export class BackendRegistrations {
  constructor(
    private readonly deps: RegistrationsDeps,
    private readonly settings: RegistrationsSettings,
  ) {}

  async register(request: RegistrationRequest): Promise<{ serviceId: string }> {
    const url = checkCallbackUrl(request.service, this.settings.policy);
    await checkResolvedHost(url, this.settings.policy, this.deps.resolve);
    const now = this.deps.clock.now();
    if (request.serviceId !== undefined) {
      const existing = await this.current(request.serviceId);
      if (existing.callbackUrl !== url.href || existing.sessionId !== request.sessionId) {
        throw new TabwireError('service_mismatch', 'Renew with the same service URL and sessionId the registration was made with');
      }
      await this.deps.store.renew(existing.serviceId, now + this.settings.validityMs);
      return { serviceId: existing.serviceId };
    }
    const serviceId = randomBytes(16).toString('base64url');
    await this.deps.store.insert({
      serviceId,
      callbackUrl: url.href,
      sessionId: request.sessionId,
      webhookSecret: request.webhookSecret ?? null,
      createdAt: now,
      expiresAt: now + this.settings.validityMs,
    });
    return { serviceId };
  }

  /** The registration a QR request names: 404 when unknown, 410 when expired. */
  async current(serviceId: string): Promise<ServiceRegistration> {
    const registration = await this.deps.store.get(serviceId);
    if (!registration) throw new TabwireError('service_not_registered', `serviceId "${serviceId}" is not registered`);
    if (registration.expiresAt <= this.deps.clock.now()) throw new TabwireError('service_expired', `serviceId "${serviceId}" has expired; register again`);
    return registration;
  }
}
