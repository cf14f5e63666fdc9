import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Accounts } from '../agent/accounts.js';
import { systemResolver, type Resolver } from '../callbacks/address-policy.js';
import { backendMode } from '../callbacks/backend-mode.js';
import { CallbackDeliverer } from '../callbacks/deliverer.js';
import { BackendRegistrations } from '../callbacks/registrations.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import type { Metrics } from '../metrics.js';
import { QuickLogin } from '../quicklogin/quicklogin.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import type { Lifecycle } from './area.js';
import { createResultOutboxRunner } from '../cluster/factories.js';
import type { LeaseFactory } from '../lease/lease.js';
import { ResultOutbox } from '../quicklogin/result-outbox.js';

/** How often the result outbox looks for owed results, and how long a settling node has to publish its own. */
const RESULT_SWEEP_MS = 1_000;
const RESULT_GRACE_MS = 2_000;

export interface QuickLoginArea extends Lifecycle {
  quickLogin: QuickLogin;
  registrations: BackendRegistrations;
  deliverer: CallbackDeliverer;
}

/** QR codes, signatures and results, and backend mode's callbacks (docs/signing.md, docs/backend.md). */
export function createQuickLoginArea(o: {
  config: Config;
  store: Store;
  hub: Hub;
  registry: TabRegistry;
  signer: ServerSigner;
  accounts: Accounts;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** Leases of the cluster (the result outbox runs on one node at a time). */
  leases: LeaseFactory;
  /** DNS for callback hosts; tests give one that answers without the network. */
  resolve?: Resolver;
}): QuickLoginArea {
  const { config, store, hub, registry, clock, log } = o;
  const policy = { allowHttpLoopback: config.callbackAllowHttpLoopback, allowedHosts: config.callbackAllowedHosts };
  const resolve = o.resolve ?? systemResolver;
  const registrations = new BackendRegistrations({ store: store.services, clock, validityMs: config.serviceValiditySeconds * 1000, policy, resolve });
  const deliverer = new CallbackDeliverer({
    callbacks: store.callbacks,
    delivery: hub,
    clock,
    log: log.child({ module: 'callbacks' }),
    metrics: o.metrics,
    privateKey: o.signer.privateKey,
    policy,
    resolve,
    ca: config.callbackCaFile === undefined ? undefined : readFileSync(config.callbackCaFile, 'utf8'),
    retryBaseMs: config.callbackRetryBaseMs,
    retryCapMs: config.callbackRetryCapMs,
    connectTimeoutMs: config.callbackConnectTimeoutMs,
    totalTimeoutMs: config.callbackTimeoutMs,
    pollMs: config.callbackPollMs,
  });
  // The metric's two children, looked up once rather than per QR request.
  const answersMade = { ahead: o.metrics.qrAnswers.labels('ahead'), on_request: o.metrics.qrAnswers.labels('on_request') };
  const quickLogin = new QuickLogin({
    backend: backendMode({ registrations, services: store.services, deliverer, clock, retryWindowMs: config.callbackRetrySeconds * 1000 }),
    store,
    delivery: hub,
    clock,
    signer: o.signer,
    log: log.child({ module: 'quicklogin' }),
    publicBaseUrl: config.publicBaseUrl,
    codeValidityMs: config.codeValiditySeconds * 1000,
    codeScanSeconds: config.codeScanSeconds,
    modulePixels: config.qrModulePixels,
    encoderThread: config.qrEncoderThread,
    countAnswer: (made) => answersMade[made].inc(),
    allowCookielessQrRequests: config.allowCookielessQrRequests,
    awaitTab: (tabId) => registry.awaitRegistration(tabId),
    firstVisit: (tabId, origin) => registry.firstVisitSession(tabId, origin),
    ownTab: (tabId, session, options) => registry.requireOwner(tabId, session, options),
    issueAgentToken: (accountId, seconds) => o.accounts.tokenFor(accountId, seconds),
    // A monotonic timer (prom-client's startTimer), whatever clock the service runs on.
    timeSignature: () => {
      const stop = o.metrics.signatureDelivery.startTimer();
      return (outcome) => void stop({ outcome });
    },
  });
  // Results owed to tabs by settlements whose node died before publishing them (docs/events.md
  // "Results reach the page once").
  const outbox = new ResultOutbox({
    codes: store.codes,
    delivery: hub,
    clock,
    log: log.child({ module: 'quicklogin:outbox' }),
    windowMs: config.outboxMaxAgeSeconds * 1000,
    graceMs: RESULT_GRACE_MS,
  });
  const outboxRunner = createResultOutboxRunner({ leases: o.leases, outbox, intervalMs: RESULT_SWEEP_MS, log });
  return {
    quickLogin,
    registrations,
    deliverer,
    start: () => {
      // Resumes pending callbacks left by a previous run or another node (durable, leased outbox).
      deliverer.start();
      outboxRunner.start();
    },
    stop: async () => {
      await outboxRunner.stop();
      await deliverer.stop();
      await quickLogin.close();
    },
  };
}
