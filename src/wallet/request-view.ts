/**
 * The signing request card (docs/wallet.md): opens a request from its signUrl, shows who asks and what
 * would be disclosed, says why this wallet cannot sign it, and sends the person's decision.
 */
import { ApiError, type Api } from './api.js';
import { signedText, type Decision } from './challenge.js';
import { el, item, shown, text, time } from './dom.js';
import { signText } from './keys.js';
import { label } from './labels.js';
import { checkChallenge, checkSignUrl, disclosed, type SignInfo } from './request.js';
import { signedIn, type WalletState } from './state.js';

/**
 * The request open in the card, if any. It reads the page's state as it is at each step (an identity
 * refreshed while a request opens is the one shown); `refreshIdentity` and `alertText` are the page's own.
 */
export class RequestView {
  private request: { url: URL; info: SignInfo } | undefined;

  constructor(
    private readonly state: WalletState,
    private readonly api: Api,
    private readonly service: string,
    private readonly refreshIdentity: () => Promise<void>,
    private readonly alertText: (message: string) => void,
  ) {}

  /** Why this wallet cannot sign the open request, or undefined when it can. */
  refusal(): string | undefined {
    if (!this.request) return undefined;
    if (!this.state.key) return 'Make a key first (step 1).';
    const identity = this.state.profile.identity;
    if (!identity) return 'Apply for an identity first (step 3).';
    if (identity.State === 'Created') return 'Your identity is waiting for the operator\'s approval; it cannot sign yet.';
    if (identity.State !== 'Approved') return `Your identity is ${identity.State}; it cannot sign.`;
    // The expiry is not checked against this device's clock, which may be off: the service decides (410).
    return undefined;
  }

  /** Shows the refusal, if any, and turns Approve and Reject off while the wallet cannot sign or has decided. */
  renderButtons(): void {
    const why = this.refusal();
    const settled = el('request-outcome').textContent !== '';
    text('request-refusal', why ?? '');
    el<HTMLButtonElement>('approve').disabled = why !== undefined || settled;
    el<HTMLButtonElement>('reject').disabled = why !== undefined || settled;
  }

  private show(url: URL, info: SignInfo): void {
    this.request = { url, info };
    // Who asks comes first and large: the person, not the service, can tell bank.example from bank-example.top.
    text('request-origin', info.origin ?? 'A program without a web origin');
    text(
      'request-origin-note',
      info.origin === null
        ? 'The request did not come from a web page. Approve only if you started it yourself.'
        : 'Check this is the site you are using right now. Approve only then.',
    );
    text('request-purpose', info.purpose);
    const identity = this.state.profile.identity;
    const list = el('request-properties');
    if (identity) {
      const what = disclosed(identity, info);
      list.replaceChildren(...what.properties.map(([name, value]) => item('li', `${label(name)}: ${value}`)));
      if (what.properties.length === 0) list.replaceChildren(item('li', 'No properties'));
      text('request-attachments', what.attachments.length === 0 ? 'No attachments.' : `Attachments: ${what.attachments.join(', ')}`);
    } else {
      const names = info.propertyFilter ?? 'all properties of your identity';
      list.replaceChildren(item('li', names));
      text('request-attachments', '');
    }
    // Your identity's id and key are disclosed too: they are part of every result (docs/signing.md).
    time('request-expires', info.expires);
    text('request-outcome', '');
    shown('request', true);
    this.renderButtons();
    const card = el('request');
    card.scrollIntoView({ block: 'start' });
    card.focus();
  }

  /** Checks a signUrl (pasted, scanned or from an app link), fetches its request and shows it in the card. */
  async open(textValue: string): Promise<void> {
    this.alertText('');
    shown('request', false);
    this.request = undefined;
    const url = checkSignUrl(textValue, this.service);
    const info = await this.api.signInfo(url);
    checkChallenge(info, url);
    if (this.state.profile.identity?.State === 'Created' && signedIn(this.state)) await this.refreshIdentity().catch(() => undefined);
    this.show(url, info);
  }

  /** Signs the open request's challenge with the decision and sends it; the outcome is shown in the card. */
  async decide(decision: Decision): Promise<void> {
    const why = this.refusal();
    const state = this.state;
    if (why || !this.request || !state.key || !state.profile.identity) throw new Error(why ?? 'Nothing to sign.');
    const { url, info } = this.request;
    const signature = await signText(state.key, signedText(info.challenge, state.profile.identity.Id, decision));
    try {
      const answer = await this.api.decide(url, state.profile.identity.Id, signature, decision, info.binding);
      text('request-outcome', answer.state === 'approved' ? 'Approved. You can return to the page that asked.' : 'Rejected. The page that asked has been told.');
    } catch (err) {
      if (err instanceof ApiError) text('request-outcome', `Not signed: ${err.message}`);
      else throw err;
    }
  }

  /** Closes the card and drops its request (the wallet was forgotten). */
  close(): void {
    this.request = undefined;
    shown('request', false);
  }
}
