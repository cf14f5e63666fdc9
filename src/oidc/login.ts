import type Provider from 'oidc-provider';
import type { ClientLike, InteractionDetails, InteractionResult } from 'oidc-provider';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import { EventTypes } from '../protocol/events.js';
import type { Caller, QrRequest } from '../quicklogin/qr-issuance.js';
import type { QuickLogin } from '../quicklogin/quicklogin.js';
import type { CodeStore } from '../store/code-store.js';
import type { OidcEntryStore } from '../store/oidc-store.js';
import { propertyFilterFor, SCOPE_CLAIMS, SUPPORTED_SCOPES } from './claims.js';
import { ACR, AMR, OIDC_TTL } from './provider.js';

/**
 * The login step of the OpenID Provider (docs/oidc.md "The login page"): the QR page of an interaction asks
 * for codes on the relying party's behalf, and once its tab hears the signed result, the interaction is
 * finished with the identity that approved. Each code issued for an interaction is recorded under the code
 * (`OidcLoginCode`), so a result counts only for the interaction it was issued for, and only once.
 */

/** The record of a code issued for an interaction. */
const CODE_MODEL = 'OidcLoginCode';

/** No attachment passes this filter (attachment file names never hold a `/`, docs/agent-api.md): attachments are never disclosed. */
const NO_ATTACHMENT = '/';

/** The scopes the relying party asked for that the provider knows (the page shows them, the grant gets them). */
const requestedScopes = (details: InteractionDetails): string[] =>
  String(details.params.scope ?? 'openid')
    .split(' ')
    .filter((scope) => SUPPORTED_SCOPES.includes(scope));

/** What the login page shows: who asks, for which site, and which claims it will get. */
export interface LoginView {
  clientName: string;
  /** The relying party's origin (its redirect URI's), shown to and signed by the person. */
  site: string;
  purpose: string;
  scopes: string[];
  claims: string[];
  /** When the interaction ends (Unix seconds). */
  expires: number;
}

export interface OidcLoginDeps {
  provider: () => Provider;
  quickLogin: Pick<QuickLogin, 'issueQr'>;
  codes: Pick<CodeStore, 'recentTabEvents'>;
  entries: OidcEntryStore;
  clock: Clock;
}

export class OidcLogin {
  constructor(
    private readonly deps: OidcLoginDeps,
    private readonly settings: { codeValidityMs: number },
  ) {}

  /** The interaction's client, which must still be registered. */
  async client(details: InteractionDetails): Promise<ClientLike> {
    const client = details.params.client_id ? await this.deps.provider().Client.find(details.params.client_id) : undefined;
    if (!client) throw new TabwireError('not_found', 'The site that started this login is no longer registered');
    return client;
  }

  view(details: InteractionDetails, client: ClientLike): LoginView {
    const redirect = typeof details.params.redirect_uri === 'string' ? details.params.redirect_uri : client.redirectUris?.[0];
    if (!redirect) throw new TabwireError('not_found', 'This login has no redirect URI');
    const site = new URL(redirect).origin;
    const clientName = typeof client.clientName === 'string' && client.clientName !== '' ? client.clientName : new URL(redirect).host;
    const scopes = requestedScopes(details);
    const claims = [...new Set(scopes.flatMap((scope) => SCOPE_CLAIMS[scope] ?? []))];
    return { clientName, site, purpose: `Log in to ${clientName}`, scopes, claims, expires: details.exp };
  }

  /** A code for the interaction's QR page, asking for the scopes' properties on the relying party's behalf. */
  async requestQr(details: InteractionDetails, request: Pick<QrRequest, 'mode' | 'tab' | 'scanSeconds'>, caller: Caller) {
    const view = this.view(details, await this.client(details));
    const issued = await this.deps.quickLogin.issueQr(
      {
        mode: request.mode,
        tab: request.tab,
        purpose: view.purpose,
        serviceId: '',
        propertyFilter: propertyFilterFor(view.scopes),
        attachmentFilter: NO_ATTACHMENT,
        ...(request.scanSeconds === undefined ? {} : { scanSeconds: request.scanSeconds }),
      },
      { ...caller, onBehalfOf: view.site },
    );
    // Recorded before the page can show the code, so no signature can come before the record.
    await this.deps.entries.upsert({
      model: CODE_MODEL,
      id: issued.code,
      payload: JSON.stringify({ uid: details.uid }),
      grantId: null,
      uid: null,
      expiresAt: this.deps.clock.now() + this.settings.codeValidityMs,
    });
    return issued.answer;
  }

  /**
   * The interaction's result from what its tab heard: the first approval (or rejection) of a code issued for
   * this interaction to this session, taken once. Undefined while there is none.
   */
  async outcome(details: InteractionDetails, tab: string, sessionHash: string): Promise<InteractionResult | undefined> {
    // Signature times are the service's clock (codes.signed_at), while the interaction's exp is the library's,
    // which is the process clock: the window is taken on the service's clock, the interaction's whole life
    // plus a minute for clocks of nodes that differ. Which interaction a code was for is the record's to say.
    const since = this.deps.clock.now() - (OIDC_TTL.Interaction + 60) * 1000;
    for (const record of await this.deps.codes.recentTabEvents(tab, sessionHash, since)) {
      const type = record.event.type;
      if (type !== EventTypes.SignatureReceived && type !== EventTypes.SignatureRejected) continue;
      const found = await this.deps.entries.find(CODE_MODEL, record.code, this.deps.clock.now());
      if (!found || (JSON.parse(found.payload) as { uid?: unknown }).uid !== details.uid) continue;
      if (!(await this.deps.entries.consume(CODE_MODEL, record.code, this.deps.clock.now()))) continue;
      if (type === EventTypes.SignatureRejected) return { error: 'access_denied', error_description: 'The person declined in the signing app' };
      const accountId = (record.event.data as { Id?: unknown }).Id;
      if (typeof accountId !== 'string') continue;
      return this.approved(details, accountId);
    }
    return undefined;
  }

  /** Login and consent at once: approving in the signing app, having seen the claims, is the consent (docs/oidc.md). */
  private async approved(details: InteractionDetails, accountId: string): Promise<InteractionResult> {
    const provider = this.deps.provider();
    const clientId = String(details.params.client_id);
    const grant = new provider.Grant({ accountId, clientId });
    const scopes = requestedScopes(details);
    grant.addOIDCScope(scopes.join(' '));
    const missingClaims = (details.prompt.details as { missingOIDCClaims?: unknown }).missingOIDCClaims;
    if (Array.isArray(missingClaims)) grant.addOIDCClaims(missingClaims.filter((c): c is string => typeof c === 'string'));
    const grantId = await grant.save();
    return { login: { accountId, amr: AMR, acr: ACR }, consent: { grantId } };
  }
}
