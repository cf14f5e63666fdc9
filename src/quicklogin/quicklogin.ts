import { TabwireError } from '../errors.js';
import { maySign } from '../identity/identity.js';
import { verifyEd25519 } from '../identity/keys.js';
import { EventTypes, type QuickLoginRejection, type QuickLoginResult } from '../protocol/events.js';
import type { TabEvent } from '../protocol/frames.js';
import type { SignInfo } from '../protocol/signing.js';
import type { Callback, CallbackToStore, Identity, LoginCode } from '../store/stores.js';
import { bindingMatches, hashBinding, newBindingToken } from './binding.js';
import { buildChallenge, signedMessage, type Decision } from './challenge.js';
import { CODE_PATTERN, newNonce } from './codes.js';
import type { QrPalette } from './qr-colours.js';
import type { SerializedJson, QrResponse } from './qr-answer.js';
import { pendingCode, QrIssuance, type Caller, type QrRequest } from './qr-issuance.js';
import type { QuickLoginDeps, QuickLoginSettings } from './quicklogin-options.js';
import { buildResult, parseFilter } from './result.js';
import { publishSettledResult } from './settled-result.js';

export { QR_MODES, SerializedJson, type QrMode, type QrResponse } from './qr-answer.js';
export type { Caller, QrRequest } from './qr-issuance.js';
export type { BackendMode, QuickLoginDeps, QuickLoginSettings } from './quicklogin-options.js';

/** What a signing app is shown before it signs (GET /QuickLogin/Sign/{code}). */
export type { SignInfo };

export interface Signature {
  legalId: string;
  signature: string;
  decision: Decision;
}

/** QuickLogin domain: issue codes, render them, take signatures, deliver results (docs/signing.md). */
export class QuickLogin {
  private readonly serviceHost: string;
  private readonly issuance: QrIssuance;

  constructor(
    private readonly deps: QuickLoginDeps,
    private readonly settings: QuickLoginSettings,
  ) {
    this.serviceHost = new URL(settings.publicBaseUrl).host;
    this.issuance = new QrIssuance(deps, settings);
  }

  /** Stops the encoder thread (at shutdown). */
  close(): Promise<void> {
    return this.issuance.close();
  }

  signUrl(code: string): string {
    return this.issuance.signUrl(code);
  }

  /**
   * Issues a fresh single-use code bound to tab, session, origin, purpose and filters (qr-issuance.ts). The
   * code records the session that holds the tab now: its result goes to that session's tab only.
   */
  requestQr(request: QrRequest, caller: Caller): Promise<QrResponse | SerializedJson> {
    return this.issuance.requestQr(request, caller);
  }

  /** `requestQr`, also saying which code was issued. */
  issueQr(request: QrRequest, caller: Caller): Promise<{ code: string; answer: QrResponse | SerializedJson }> {
    return this.issuance.issue(request, caller);
  }

  /** The PNG of a code while it is valid (in `palette`, default black on white), with how long it may be cached; undefined otherwise. */
  qrPng(code: string, palette?: QrPalette): Promise<{ png: Buffer; maxAgeSeconds: number } | undefined> {
    return this.issuance.qrPng(code, palette);
  }

  /**
   * What a signing app shows and signs (`GET /QuickLogin/Sign/{code}` as JSON). Refuses unknown (404),
   * used (409) and expired (410) codes. A scan-limited code (docs/relay.md) is bound by its first fetch,
   * which gets the binding token; later it answers only a fetch presenting that token (else 409
   * `code_bound`), and an unbound one fetched too late is 410 `code_too_old`.
   */
  async describe(code: string, presentedBinding?: string): Promise<SignInfo> {
    const record = await this.usableCode(code, true);
    const info = this.infoOf(record);
    if (record.scanSeconds === null) return info;
    if (record.bindingHash !== null) {
      if (bindingMatches(presentedBinding, record.bindingHash)) return { ...info, binding: presentedBinding! };
      throw new TabwireError('code_bound', 'Another signing app has already fetched this login code; scan the code the page shows now');
    }
    const now = this.deps.clock.now();
    if (now - record.createdAt > record.scanSeconds * 1000) {
      throw new TabwireError(
        'code_too_old',
        `This QR code had to be scanned within ${record.scanSeconds} s of being shown; scan the code the page shows now`,
      );
    }
    const token = newBindingToken();
    // One conditional UPDATE decides between apps fetching at once: exactly one gets a token.
    if (await this.deps.store.codes.bind(code, hashBinding(token), now)) return { ...info, binding: token };
    await this.usableCode(code);
    throw new TabwireError('code_bound', 'Another signing app has already fetched this login code; scan the code the page shows now');
  }

  /** What the signer shows and signs, without binding the code (same-device approval; dev-approval.ts). */
  async peek(code: string): Promise<SignInfo> {
    return this.infoOf(await this.usableCode(code, true));
  }

  private infoOf(record: LoginCode): SignInfo {
    const { code } = record;
    return {
      code,
      purpose: record.purpose,
      origin: record.origin,
      requester: record.origin === null ? null : new URL(record.origin).host,
      expires: Math.floor(record.expiresAt / 1000),
      challenge: this.challengeOf(record),
      propertyFilter: record.propertyFilter,
      attachmentFilter: record.attachmentFilter,
    };
  }

  /**
   * Takes an approval or rejection signed by an approved identity. The first valid signature
   * settles the code; the result goes to the tab through the hub.
   */
  async sign(code: string, signature: Signature, presentedBinding?: string): Promise<{ state: 'approved' | 'rejected' }> {
    const delivered = this.deps.timeSignature?.();
    // The code and the identity are read at once: one round trip to a shared store instead of two
    // (docs/benchmarks.md#cluster-round-trips: each sequential round trip adds to the signature's tail). A failed
    // identity look-up waits for the code's check, so a bad code is still reported first.
    const identityRead = this.deps.store.identities.get(signature.legalId);
    identityRead.catch(() => undefined);
    const record = await this.signableCode(code);
    // A scan-limited code is signed only by the app its first fetch bound it to (docs/relay.md). The
    // binding never changes once set, so checking the record read here is as good as checking at settle.
    if (record.scanSeconds !== null && !bindingMatches(presentedBinding, record.bindingHash)) {
      throw new TabwireError(
        'binding_required',
        record.bindingHash === null
          ? 'This login code must be fetched by the signing app (GET with Accept: application/json) before it is signed; send the binding token it gets in the Tabwire-Binding header'
          : 'The Tabwire-Binding header is missing or is not the token the fetch of this login code was given',
      );
    }
    const identity = await identityRead;
    if (!identity) throw new TabwireError('identity_not_found', `Identity "${signature.legalId}" does not exist`);
    const now = this.deps.clock.now();
    if (!maySign(identity, now)) {
      throw new TabwireError('identity_not_approved', `Identity "${identity.id}" is ${identity.state}; only an Approved identity may sign`);
    }
    if (identity.keyProblem) {
      throw new TabwireError('identity_key_refused', `Identity "${identity.id}" has a key that proves nothing (${identity.keyProblem}); it may not sign`);
    }
    const message = signedMessage(this.challengeOf(record), identity.id, signature.decision);
    if (!verifyEd25519(identity.clientPubKey, message, signature.signature)) {
      throw new TabwireError('signature_invalid', 'The signature does not verify with the identity\'s key over the challenge (docs/signing.md)');
    }
    const state = signature.decision === 'approve' ? 'approved' : 'rejected';
    const result = state === 'approved' ? await this.resultFor(record, identity, signature.signature) : undefined;
    // Backend mode: an approval reaches the tab as SignatureReceivedBE once the backend took it (outbox);
    // a rejection is told to the tab at once in both modes, so the page need not wait for the code to expire.
    const tabEvent =
      record.tabId === '' || record.sessionHash === null || (record.serviceId !== '' && result) ? undefined : this.tabEventFor(record, identity.id, result);
    const settle = (toStore?: CallbackToStore) =>
      this.deps.store.codes.settle(code, { state, legalId: identity.id, now, ...(toStore ? { callback: toStore } : {}), ...(tabEvent ? { tabEvent } : {}) });
    // Backend mode: the callback is stored in the transaction that settles the code, so it exists only for
    // the one signature that won, and an accepted signature's callback is never lost.
    const callback = result && record.serviceId !== '' ? await this.deps.backend.prepare(record, result) : undefined;
    const settled = callback ? await this.deps.backend.settleWith(callback, settle) : await settle();
    if (!settled) {
      // Lost a race with another signature, or expired meanwhile: report which.
      await this.usableCode(code);
      throw new TabwireError('code_already_used');
    }
    this.deps.log.info({ code: code.slice(0, 6), legalId: identity.id, state, backend: callback !== undefined }, 'login code settled');
    // Only the session that asked for the code hears of it, even if another session holds the tab id now.
    // In backend mode the tab hears SignatureReceivedBE from the outbox once the backend accepted it.
    if (tabEvent && (await this.publishResult(record, tabEvent))) delivered?.(state);
    return { state };
  }

  /**
   * Publishes a settled code's tab event under the code's publish key and marks the settlement row
   * published. From the settlement's commit to that mark the row is the event's outbox: a node that dies
   * in between leaves it owed, and the result outbox (result-outbox.ts) of a live node publishes it under
   * the same key, so the tab gets it once with one id (docs/events.md "Results reach the page once").
   * Resolves whether the event is in the tab's stream now.
   */
  private async publishResult(record: LoginCode, tabEvent: TabEvent): Promise<boolean> {
    if (record.tabId === '' || record.sessionHash === null) return false;
    return publishSettledResult(this.deps, record.code, { tabId: record.tabId, session: record.sessionHash }, tabEvent);
  }

  /** What a code's tab is told when it is settled: the result (browser-only mode), or the rejection (both modes). */
  private tabEventFor(record: LoginCode, legalId: string, result: QuickLoginResult | undefined): TabEvent {
    if (result) return { type: EventTypes.SignatureReceived, data: result };
    const data: QuickLoginRejection = { Id: legalId, Purpose: record.purpose };
    return { type: EventTypes.SignatureRejected, data };
  }

  private async resultFor(record: LoginCode, identity: Identity, clientSignature: string): Promise<QuickLoginResult> {
    return buildResult({
      identity,
      purpose: record.purpose,
      propertyFilter: record.propertyFilter,
      attachmentFilter: record.attachmentFilter,
      clientSignature,
      attachmentUrlPrefix: `${this.settings.publicBaseUrl}/QuickLogin/Attachment/${record.code}`,
      agentToken:
        record.agentApiTimeout !== null && identity.accountId !== null
          ? await this.deps.issueAgentToken(identity.accountId, record.agentApiTimeout)
          : undefined,
      signServer: (unsigned) => this.deps.signer.signJson(unsigned),
    });
  }

  /**
   * An attachment of an approved result, for the page that asked: the request must carry the
   * session the code was issued to, within `freshMs` of the signature, and the attachment must be
   * one the result included (docs/agent-api.md "Attachments").
   */
  async resultAttachment(code: string, attachmentId: string, sessionHash: string | null, freshMs: number) {
    const record = CODE_PATTERN.test(code) ? await this.deps.store.codes.get(code) : undefined;
    const fresh = record?.state === 'approved' && record.signedAt !== null && this.deps.clock.now() - record.signedAt < freshMs;
    if (!record || !fresh || record.sessionHash === null || record.sessionHash !== sessionHash) {
      throw new TabwireError('not_found', 'No such attachment for this session, or the result is no longer fresh');
    }
    const attachment = await this.deps.store.attachments.get(attachmentId);
    const allowed = parseFilter(record.attachmentFilter);
    if (!attachment || attachment.identityId !== record.legalId || (allowed && !allowed.has(attachment.fileName))) {
      throw new TabwireError('not_found', 'No such attachment for this session, or the result is no longer fresh');
    }
    return attachment;
  }

  /**
   * A code a signature may be for: pending and unexpired. Refuses unknown (404), used (409) and expired
   * (410) codes. A used code's tab event that is still owed (its node died between the settlement's commit
   * and the publish, and the signing app repeats the POST whose answer it never got) is published now,
   * under its key, instead of at the result outbox's next sweep: the 409 then means "signed, and the page
   * is told" (docs/signing.md "Refusals").
   */
  private async signableCode(code: string): Promise<LoginCode> {
    const record = await this.codeRow(code);
    if (!record) throw new TabwireError('code_not_found');
    if (record.state !== 'pending') {
      if (record.tabEvent && record.published === false) await this.publishResult(record, record.tabEvent);
      throw new TabwireError('code_already_used');
    }
    if (record.expiresAt <= this.deps.clock.now()) throw new TabwireError('code_expired');
    return record;
  }

  private async usableCode(code: string, firstFetch = false): Promise<LoginCode> {
    const record = await this.codeRow(code, firstFetch);
    if (!record) throw new TabwireError('code_not_found');
    if (record.state !== 'pending') throw new TabwireError('code_already_used');
    if (record.expiresAt <= this.deps.clock.now()) throw new TabwireError('code_expired');
    return record;
  }

  /**
   * A code's row. A derived code (docs/signing.md "Derived codes") becomes one when it is first resolved: its MAC
   * and request checked, then inserted unless another node did so first, and from then on it is the row that
   * binds and settles. An expired derived code is answered as a row that says so, without a write. A code
   * that is already a row (also a random one issued before derived codes) resolves as it is.
   * `firstFetch` (a signing app fetching the code, which is usually not a row yet): while this node issues
   * derived codes, try the insert before the read, so the usual first fetch is one statement instead of a read
   * that finds nothing and an insert. (Issuing random stored codes, the read comes first: a random code's
   * first fetch then finds its row at once, without looking for a request it never had.)
   */
  private async codeRow(code: string, firstFetch = false): Promise<LoginCode | undefined> {
    if (!CODE_PATTERN.test(code)) return undefined;
    const now = this.deps.clock.now();
    if (firstFetch && this.settings.derivedCodes) {
      const row = await this.derivedRow(code, now);
      if (row && row.expiresAt > now && (await this.deps.store.codes.insertIfAbsent(row))) return row;
    }
    const stored = await this.deps.store.codes.get(code);
    if (stored) return stored;
    const row = await this.derivedRow(code, now);
    if (!row || row.expiresAt <= now) return row;
    // Of nodes resolving the code at once, one inserts; the others read its row (its nonce, and any binding made since).
    if (await this.deps.store.codes.insertIfAbsent(row)) return row;
    return this.deps.store.codes.get(code);
  }

  /** The pending row a genuine derived code stands for (a new nonce each time; expired ones too); undefined for any other code. */
  private async derivedRow(code: string, now: number): Promise<LoginCode | undefined> {
    const derived = await this.deps.requests?.resolve(code, now);
    if (!derived) return undefined;
    const { id: _id, kid: _kid, createdAt: _createdAt, expiresAt: _expiresAt, ...params } = derived.request.record;
    return pendingCode(code, params, newNonce(), derived.parts.issuedAt);
  }

  private challengeOf(record: LoginCode): string {
    return buildChallenge({
      code: record.code,
      purpose: record.purpose,
      origin: record.origin,
      service: this.serviceHost,
      expires: Math.floor(record.expiresAt / 1000),
      nonce: record.nonce,
    });
  }
}
