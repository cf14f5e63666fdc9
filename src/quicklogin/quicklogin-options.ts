import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Delivery } from '../hub/delivery.js';
import type { TabRegistry } from '../hub/registry.js';
import type { QuickLoginResult } from '../protocol/events.js';
import type { Callback, CallbackToStore, LoginCode, Store } from '../store/stores.js';
import type { PublishedMarks } from './published-marks.js';
import type { QrRequests } from './qr-requests.js';
import type { ServerSigner } from './server-signer.js';

/** What QuickLogin needs of backend mode (callbacks/backend-mode.ts). */
export interface BackendMode {
  /** Checks a QR request's serviceId: 404 unknown, 410 expired; resolves when the registration expires. */
  check(serviceId: string): Promise<number>;
  /** The callback an approved code's result becomes (not stored yet). 404 when the registration is gone. */
  prepare(record: LoginCode, result: QuickLoginResult): Promise<Callback>;
  /**
   * Runs `settle`, which stores the callback in the transaction that settles the code, and attempts
   * it once stored. Resolves with what `settle` resolved: false means the code was not settled and
   * no callback exists.
   */
  settleWith(callback: Callback, settle: (toStore: CallbackToStore) => Promise<boolean>): Promise<boolean>;
}

/** What QuickLogin calls: the store, the tabs' delivery, time, the server's signer, backend mode and the tab registry's rules. */
export interface QuickLoginDeps {
  store: Store;
  /** QR requests and their derived codes (docs/signing.md "Derived codes"); absent, no derived code resolves. */
  requests?: QrRequests;
  delivery: Delivery;
  /** Marks settled results published once they are in their tabs' streams (written together, published-marks.ts). */
  marks: Pick<PublishedMarks, 'add'>;
  clock: Clock;
  signer: ServerSigner;
  log: Logger;
  /** Counts a `text` or `base64` answer by where it was made (`tabwire_qr_answers_total`, docs/metrics.md). */
  countAnswer?: (made: 'ahead' | 'on_request') => void;
  /** Backend mode: registrations and the callback outbox. */
  backend: BackendMode;
  /** Resolves when the tab registers, or after a bounded wait (cookie-less QR requests that beat their tab's Register). */
  awaitTab: (tabId: string) => Promise<void>;
  /** A cookie-less QR request of a first visit: the session it is for, or undefined (TabRegistry.firstVisitSession). */
  firstVisit: (tabId: string, origin: string) => Promise<string | undefined>;
  /** The tab-ownership rule (TabRegistry.requireOwner). */
  ownTab: TabRegistry['requireOwner'];
  /** Session-proxy mode (`agentApiTimeout`): a token for an account, undefined when it is gone or disabled. */
  issueAgentToken: (accountId: string, seconds: number) => Promise<{ jwt: string; expires: number } | undefined>;
  /**
   * Started when a signature arrives; stopped once its result or rejection is in the tab's event stream
   * (`tabwire_signature_delivery_seconds`, docs/metrics.md). Not stopped for a refused signature.
   */
  timeSignature?: () => (outcome: 'approved' | 'rejected') => void;
}

/** QuickLogin's address, code lifetimes, QR rendering and request policy (from the configuration). */
export interface QuickLoginSettings {
  publicBaseUrl: string;
  codeValidityMs: number;
  /** Config `codeScanSeconds` (0: off): the scan freshness of every code, which a request may tighten (docs/relay.md). */
  codeScanSeconds: number;
  modulePixels: number;
  /** Config `qrDerivedCodes`: codes are derived from the stored request (with `requests`), not random and stored per refresh. */
  derivedCodes: boolean;
  /** Config `qrEncoderThread`: under load, `text` and `base64` answers are made ahead on a thread (qr-stock.ts). */
  encoderThread: boolean;
  /** See config `allowCookielessQrRequests`: accept a registered tab without its session, from an allowed Origin. */
  allowCookielessQrRequests: boolean;
}
