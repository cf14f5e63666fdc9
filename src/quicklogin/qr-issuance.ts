import { clampSeconds } from '../agent/tokens.js';
import { TabwireError } from '../errors.js';
import type { LoginCode } from '../store/stores.js';
import { effectiveScanSeconds } from './binding.js';
import { CODE_PATTERN, newCode, newNonce } from './codes.js';
import type { QrPalette } from './qr-colours.js';
import { QrAnswers, SerializedJson, type QrMode, type QrResponse } from './qr-answer.js';
import { QrStock } from './qr-stock.js';
import type { QrRequestParams } from './qr-requests.js';
import type { QuickLoginDeps, QuickLoginSettings } from './quicklogin-options.js';

/** The row of a code issued at `now` for a request with `params` (pending, unbound). */
export function pendingCode(code: string, params: QrRequestParams, nonce: string, now: number): LoginCode {
  const { validityMs, ...bound } = params;
  return { code, ...bound, nonce, createdAt: now, expiresAt: now + validityMs, state: 'pending', legalId: null, signedAt: null, fetchedAt: null, bindingHash: null };
}

/** Backend registrations a node remembers as checked (checkService). */
const MAX_SERVICES = 10_000;

/** A QR request (docs/signing.md), already schema-validated. */
export interface QrRequest {
  mode: QrMode;
  purpose: string;
  serviceId: string;
  tab: string;
  agentApiTimeout?: number;
  propertyFilter?: string;
  attachmentFilter?: string;
  /** Scan freshness for this code (docs/relay.md); may only tighten the deployment's `codeScanSeconds`. */
  scanSeconds?: number;
}

/** Who asked: the session cookie (hashed, null without one) and the page's Origin, both bound to the code. */
export interface Caller {
  sessionHash: string | null;
  origin: string | null;
  /**
   * The site the person logs in to, when a page of this service asks on its behalf (the OpenID Provider's
   * login page, docs/oidc.md): the signing app shows it, and the challenge binds it, instead of the page's
   * own origin, which still binds the tab.
   */
  onBehalfOf?: string;
}

/** What issuing codes calls, of QuickLogin's dependencies. */
export type QrIssuanceDeps = Pick<QuickLoginDeps, 'store' | 'requests' | 'clock' | 'countAnswer' | 'backend' | 'awaitTab' | 'firstVisit' | 'ownTab'>;

/** What issuing codes reads of QuickLogin's settings. */
export type QrIssuanceSettings = Pick<
  QuickLoginSettings,
  'publicBaseUrl' | 'derivedCodes' | 'codeValidityMs' | 'codeScanSeconds' | 'modulePixels' | 'encoderThread' | 'allowCookielessQrRequests'
>;

/**
 * The issuing half of QuickLogin (docs/signing.md): a fresh code per QR request, bound to the caller, stored,
 * and answered in the mode asked for (made ahead on the encoder thread when one is ready, qr-stock.ts); and
 * the PNG of a valid code.
 */
export class QrIssuance {
  private readonly qr: QrAnswers;
  private readonly stock: QrStock;
  /** Backend registrations checked here: serviceId -> when it expires (checkService). */
  private readonly services = new Map<string, number>();

  constructor(
    private readonly deps: QrIssuanceDeps,
    private readonly settings: QrIssuanceSettings,
  ) {
    this.qr = new QrAnswers({ publicBaseUrl: settings.publicBaseUrl, modulePixels: settings.modulePixels });
    this.stock = new QrStock({
      publicBaseUrl: settings.publicBaseUrl,
      modulePixels: settings.modulePixels,
      // Derived codes are made from the request, so there is nothing to make ahead.
      enabled: settings.encoderThread && !(settings.derivedCodes && deps.requests),
      newCode: () => newCode(deps.clock.now()),
    });
  }

  /** Stops the encoder thread (at shutdown). */
  close(): Promise<void> {
    return this.stock.close();
  }

  signUrl(code: string): string {
    return this.qr.signUrl(code);
  }

  /**
   * Issues a fresh single-use code bound to tab, session, origin, purpose and filters. The code
   * records the session that holds the tab now: its result goes to that session's tab only.
   */
  async requestQr(request: QrRequest, caller: Caller): Promise<QrResponse | SerializedJson> {
    return (await this.issue(request, caller)).answer;
  }

  /** `requestQr`, also saying which code was issued (for a caller that records it, such as the OpenID Provider's login). */
  async issue(request: QrRequest, caller: Caller): Promise<{ code: string; answer: QrResponse | SerializedJson }> {
    if (request.serviceId !== '') await this.checkService(request.serviceId);
    const sessionHash = request.tab === '' ? caller.sessionHash : await this.tabSession(request.tab, caller);
    const now = this.deps.clock.now();
    const params: QrRequestParams = {
      tabId: request.tab,
      sessionHash,
      origin: caller.onBehalfOf ?? caller.origin,
      purpose: request.purpose,
      propertyFilter: request.propertyFilter ?? null,
      attachmentFilter: request.attachmentFilter ?? null,
      serviceId: request.serviceId,
      // Whole seconds in 1..3600, as the token will be issued (docs/agent-api.md); the column is an integer.
      agentApiTimeout: request.agentApiTimeout === undefined ? null : clampSeconds(request.agentApiTimeout),
      scanSeconds: effectiveScanSeconds(this.settings.codeScanSeconds, request.scanSeconds),
      validityMs: this.settings.codeValidityMs,
    };
    if (this.settings.derivedCodes && this.deps.requests) {
      // Derived: no write, and no read once this node knows the request (docs/signing.md "Derived codes").
      // Its symbol is encoded here: a code made ahead on the encoder thread could not be derived from the request.
      const code = await this.deps.requests.issue(params, now);
      if (request.mode !== 'image') this.deps.countAnswer?.('on_request');
      return { code, answer: this.qr.answer(request.mode, code) };
    }
    // Taken once the request is known to be good, so no ready answer is spent on a refused one.
    const ready = request.mode === 'image' ? undefined : this.stock.take(request.mode);
    if (request.mode !== 'image') this.deps.countAnswer?.(ready ? 'ahead' : 'on_request');
    const code = ready?.code ?? newCode(now);
    await this.deps.store.codes.insert(pendingCode(code, params, newNonce(), now));
    return { code, answer: ready ? new SerializedJson(ready.answer) : this.qr.answer(request.mode, code) };
  }

  /**
   * Backend mode's registration check, remembered until the registration expires: a registration leaves the
   * store only after its expiry and a renewal only moves that later, so a refresh of a page in backend mode
   * reads the store once per registration and node, not once per code.
   */
  private async checkService(serviceId: string): Promise<void> {
    const validUntil = this.services.get(serviceId);
    if (validUntil !== undefined && this.deps.clock.now() < validUntil) return;
    this.services.delete(serviceId);
    const expiresAt = await this.deps.backend.check(serviceId);
    if (this.services.size >= MAX_SERVICES) this.services.delete(this.services.keys().next().value!);
    this.services.set(serviceId, expiresAt);
  }

  /**
   * The session a QR request's tab belongs to, checked against the caller; the code's result goes
   * there (docs/events.md "Results belong to the session that asked", "QR requests and the tab").
   */
  private async tabSession(tab: string, caller: Caller): Promise<string> {
    if (caller.sessionHash !== null) {
      // A QR request may come before the tab's Register (first visit, a slow handshake): it binds the tab.
      return (await this.deps.ownTab(tab, caller.sessionHash, { bindIfFree: true, origin: caller.origin })).session;
    }
    if (caller.origin === null) {
      throw new TabwireError('session_missing', 'A QR request naming a tab must carry the session cookie set when the tab registered');
    }
    if (!this.settings.allowCookielessQrRequests) {
      // A first visit: the page asked before its channel's handshake set the cookie. Answered for the session
      // of the Register that binds the tab around now, from this origin, once (docs/events.md).
      const session = await this.deps.firstVisit(tab, caller.origin);
      if (session !== undefined) return session;
      throw new TabwireError('session_missing', 'A QR request naming a tab must carry the session cookie set when the tab registered');
    }
    // Compatibility switch (docs/events.md): the request may come before the tab's Register; wait for it, bounded.
    let binding = await this.deps.store.tabs.bindingOf(tab);
    if (binding === undefined) {
      await this.deps.awaitTab(tab);
      binding = await this.deps.store.tabs.bindingOf(tab);
    }
    if (binding === undefined) throw new TabwireError('tab_not_registered', `Tab "${tab}" is not registered`);
    // Only from the page origin the tab registered from; its result goes to the session holding the tab
    // now, never to one that takes the tab id later.
    if (binding.origin !== caller.origin) {
      throw new TabwireError('origin_not_allowed', 'A QR request without the session cookie must come from the origin the tab registered from');
    }
    return binding.session;
  }

  /**
   * The PNG of a code while it is valid (in `palette`, default black on white), with how long it may be cached;
   * undefined otherwise. A derived code is checked without any write (and without a read once its request is known).
   */
  async qrPng(code: string, palette?: QrPalette): Promise<{ png: Buffer; maxAgeSeconds: number } | undefined> {
    if (!CODE_PATTERN.test(code)) return undefined;
    const now = this.deps.clock.now();
    const derived = await this.deps.requests?.resolve(code, now);
    const record = derived ? { expiresAt: derived.parts.issuedAt + derived.request.record.validityMs } : await this.deps.store.codes.get(code);
    if (!record || record.expiresAt <= now) return undefined;
    const png = this.qr.png(code, palette);
    return { png, maxAgeSeconds: Math.floor((record.expiresAt - now) / 1000) };
  }
}
