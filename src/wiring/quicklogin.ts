import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Accounts } from '../agent/accounts.js';
import { systemResolver, type Resolver } from '../callbacks/address-policy.js';
import { backendMode } from '../callbacks/backend-mode.js';
import { CallbackDeliverer } from '../callbacks/deliverer.js';
import { BackendRegistrations } from '../callbacks/registrations.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { pagesRoutes } from '../http/pages-routes.js';
import { quickLoginRoutes } from '../http/quicklogin-routes.js';
import { walletRoutes } from '../http/wallet-routes.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import type { DevIdentity } from '../identity/dev-identity.js';
import { runPeriodicallyOncePerCluster } from '../lease/leader.js';
import type { LeaseFactory } from '../lease/lease.js';
import type { Metrics } from '../metrics.js';
import type { CodeKeyRing } from '../quicklogin/code-keys.js';
import { PublishedMarks } from '../quicklogin/published-marks.js';
import { QrRequests } from '../quicklogin/qr-requests.js';
import { QuickLogin } from '../quicklogin/quicklogin.js';
import { ResultOutbox } from '../quicklogin/result-outbox.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import type { Area } from './area.js';
import { LEASES } from './shared.js';

/** How often the result outbox looks for owed results, and how long a settling node has to publish its own. */
const RESULT_SWEEP_MS = 1_000;
const RESULT_GRACE_MS = 2_000;
/**
 * How long a published result's mark waits for others to share its statement. A quarter of the grace, so a
 * live node's marks are committed long before the outbox would take its results for owed.
 */
const RESULT_MARK_WINDOW_MS = RESULT_GRACE_MS / 4;
/**
 * Short, so that when the holder dies with results owed (the case the outbox is for), another node
 * publishes them within seconds: the hold ends at most this long after the last renewal.
 */
const RESULT_OUTBOX_LEASE_TTL_MS = 6_000;

export interface QuickLoginArea extends Area {
  quickLogin: QuickLogin;
  registrations: BackendRegistrations;
  deliverer: CallbackDeliverer;
}

export interface QuickLoginAreaDeps {
  store: Store;
  hub: Hub;
  registry: TabRegistry;
  signer: ServerSigner;
  /** The code keys (wiring/keys.ts): QR requests' codes are derived under them unless config `qrDerivedCodes` is off. */
  codeKeys: CodeKeyRing;
  accounts: Accounts;
  /** The development identity, when same-device approval is enabled (wiring/identity.ts). */
  devIdentity: DevIdentity | undefined;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** Leases of the cluster (the result outbox runs on one node at a time). */
  leases: LeaseFactory;
  /** DNS for callback hosts; tests give one that answers without the network. */
  resolve?: Resolver;
}

/**
 * QR codes, signatures and results, and backend mode's callbacks (docs/signing.md, docs/backend.md); the
 * QuickLogin routes, the demo page and the web wallet.
 */
export function createQuickLoginArea(config: Config, deps: QuickLoginAreaDeps): QuickLoginArea {
  const { store, hub, registry, signer, codeKeys, accounts, devIdentity, clock, metrics, log, leases } = deps;
  const policy = { allowHttpLoopback: config.callbackAllowHttpLoopback, allowedHosts: config.callbackAllowedHosts };
  const resolve = deps.resolve ?? systemResolver;
  const registrations = new BackendRegistrations({ store: store.services, clock, resolve }, { validityMs: config.serviceValiditySeconds * 1000, policy });
  const deliverer = new CallbackDeliverer(
    { callbacks: store.callbacks, delivery: hub, clock, log: log.child({ module: 'callbacks' }), metrics, resolve },
    {
      privateKey: signer.privateKey,
      policy,
      ca: config.callbackCaFile === undefined ? undefined : readFileSync(config.callbackCaFile, 'utf8'),
      retryBaseMs: config.callbackRetryBaseMs,
      retryCapMs: config.callbackRetryCapMs,
      connectTimeoutMs: config.callbackConnectTimeoutMs,
      totalTimeoutMs: config.callbackTimeoutMs,
      pollMs: config.callbackPollMs,
    },
  );
  const marks = new PublishedMarks({ codes: store.codes, clock, log: log.child({ module: 'quicklogin:marks' }) }, RESULT_MARK_WINDOW_MS);
  // The metric's two children, looked up once rather than per QR request.
  const answersMade = { ahead: metrics.qrAnswers.labels('ahead'), on_request: metrics.qrAnswers.labels('on_request') };
  const quickLogin = new QuickLogin(
    {
      backend: backendMode({ registrations, services: store.services, deliverer, clock, retryWindowMs: config.callbackRetrySeconds * 1000 }),
      store,
      // Always there, so codes derived before `qrDerivedCodes` was turned off still resolve until they expire.
      requests: new QrRequests({ store: store.qrRequests, keys: codeKeys, log: log.child({ module: 'quicklogin:requests' }) }),
      delivery: hub,
      marks,
      clock,
      signer,
      log: log.child({ module: 'quicklogin' }),
      countAnswer: (made) => answersMade[made].inc(),
      awaitTab: (tabId) => registry.awaitRegistration(tabId),
      firstVisit: (tabId, origin) => registry.firstVisitSession(tabId, origin),
      ownTab: (tabId, session, options) => registry.requireOwner(tabId, session, options),
      issueAgentToken: (accountId, seconds) => accounts.tokenFor(accountId, seconds),
      // A monotonic timer (prom-client's startTimer), whatever clock the service runs on.
      timeSignature: () => {
        const stop = metrics.signatureDelivery.startTimer();
        return (outcome) => void stop({ outcome });
      },
    },
    {
      publicBaseUrl: config.publicBaseUrl,
      derivedCodes: config.qrDerivedCodes,
      codeValidityMs: config.codeValiditySeconds * 1000,
      codeScanSeconds: config.codeScanSeconds,
      modulePixels: config.qrModulePixels,
      encoderThread: config.qrEncoderThread,
      allowCookielessQrRequests: config.allowCookielessQrRequests,
    },
  );
  // Results owed to tabs by settlements whose node died before publishing them (docs/events.md
  // "Results reach the page once").
  const outbox = new ResultOutbox(
    { codes: store.codes, delivery: hub, marks, clock, log: log.child({ module: 'quicklogin:outbox' }) },
    { windowMs: config.outboxMaxAgeSeconds * 1000, graceMs: RESULT_GRACE_MS },
  );
  const outboxRunner = runPeriodicallyOncePerCluster(leases(LEASES.resultOutbox, RESULT_OUTBOX_LEASE_TTL_MS), outbox, RESULT_SWEEP_MS, log);
  return {
    quickLogin,
    registrations,
    deliverer,
    async registerRoutes({ app, cookies, limits }) {
      await app.register(quickLoginRoutes, {
        limits,
        quickLogin,
        signer,
        registrations,
        allowedOrigins: config.allowedOrigins,
        devIdentity,
        attachmentFreshMs: config.attachmentUrlSeconds * 1000,
      });
      // It hands out the session cookie, so a page's first QR request carries it even when the event
      // channel's handshake is still under way (docs/events.md "QR requests and the tab").
      await app.register(pagesRoutes, { cookies });
      // The web wallet (docs/wallet.md): static files, no session cookie (it needs none).
      await app.register(walletRoutes);
    },
    start: () => {
      // Resumes pending callbacks left by a previous run or another node (durable, leased outbox).
      deliverer.start();
      outboxRunner.start();
    },
    stop: async () => {
      await outboxRunner.stop();
      await deliverer.stop();
      await quickLogin.close();
      // Before the store closes: what was published is marked, so the outbox does not publish it again.
      await marks.flush();
    },
  };
}
