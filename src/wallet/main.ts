/**
 * The web wallet (docs/wallet.md): a key made and kept in this browser, an agent account, an identity
 * applied for with that key, and the signing of QuickLogin requests opened from a QR code or a link.
 */
import { Api, ApiError } from './api.js';
import { applicationText, type Application } from './challenge.js';
import { clearAll, load, save } from './db.js';
import { el, fileAsBase64, item, shown, text, time } from './dom.js';
import { createKey, loadKey, signText } from './keys.js';
import { label } from './labels.js';
import { decoderName } from './qr.js';
import { signUrlFromLocation, type IdentityView } from './request.js';
import { RequestView } from './request-view.js';
import { Scanner } from './scanner.js';
import { signedIn, type Profile, type Session, type WalletState } from './state.js';

/** The flag the service's demo page reads to send "Approve on this device" here (same origin only). */
export const WALLET_FLAG = 'tabwire.wallet';

/** The service: this page's origin, or the one a copy built for another origin names (docs/wallet.md). */
const service = new URL(document.querySelector<HTMLMetaElement>('meta[name="tabwire-service"]')?.content || location.origin).origin;
const api = new Api(service);

// One object, not three variables: the request card (request-view.ts) reads the same state this page changes.
const state: WalletState = { key: undefined, profile: {}, session: undefined };

function alertText(message: string): void {
  text('alert', message);
}

/** Runs an action from a button, showing its failure as text and keeping the button off meanwhile. */
function action(button: HTMLButtonElement, work: () => Promise<void>): void {
  alertText('');
  button.disabled = true;
  work()
    .catch((err: unknown) => alertText(err instanceof Error ? err.message : String(err)))
    .finally(() => {
      button.disabled = false;
      render();
    });
}

function renderIdentity(identity: IdentityView | undefined): void {
  shown('identity-info', identity !== undefined);
  shown('apply-form', identity === undefined && state.key !== undefined && signedIn(state) !== undefined);
  shown('identity-none', identity === undefined && (state.key === undefined || signedIn(state) === undefined));
  if (!identity) return;
  text('identity-state', identity.State);
  text('identity-id', identity.Id);
  const hints: Record<string, string> = {
    Created: 'Waiting for the operator to approve it. Check again later.',
    Approved: 'Ready: you can sign requests of this service.',
    Rejected: 'The operator rejected it. Forget this wallet and apply again.',
  };
  text('identity-hint', hints[identity.State] ?? 'This identity can no longer sign.');
  const props = el('identity-props');
  props.replaceChildren(...Object.entries(identity.Properties).flatMap(([name, value]) => [item('dt', label(name)), item('dd', value)]));
  const files = el('identity-attachments');
  files.replaceChildren(...identity.Attachments.map((a) => item('li', `${a.FileName} (${a.ContentType})`)));
  if (identity.Attachments.length === 0) files.replaceChildren(item('li', 'None'));
}

function render(): void {
  text('service-host', new URL(service).host);
  shown('key-none', state.key === undefined);
  shown('key-info', state.key !== undefined);
  if (state.key) text('key-public', state.key.publicKey);
  const current = signedIn(state);
  shown('account-form', current === undefined);
  shown('account-info', current !== undefined);
  if (current) {
    text('account-name', current.userName);
    time('account-expires', current.expires);
  }
  renderIdentity(state.profile.identity);
  // The demo page on this origin sends same-device approvals here once the wallet can sign.
  if (state.profile.identity?.State === 'Approved' && state.key) localStorage.setItem(WALLET_FLAG, '1');
  else localStorage.removeItem(WALLET_FLAG);
  requests.renderButtons();
}

// ---- key, account, identity ----------------------------------------------------------------

async function makeKey(): Promise<void> {
  state.key = await createKey();
}

function credentials(): { userName: string; password: string; apiKey: string } {
  const form = el<HTMLFormElement>('account-form');
  const data = new FormData(form);
  const userName = String(data.get('userName') ?? '').trim().toLowerCase();
  const password = String(data.get('password') ?? '');
  if (!/^[a-z0-9][a-z0-9._-]{1,63}$/.test(userName)) throw new Error('A user name is 2 to 64 characters: letters, digits, dot, dash, underscore.');
  if (password.length < 8) throw new Error('A password has at least 8 characters.');
  return { userName, password, apiKey: String(data.get('apiKey') ?? '').trim() };
}

async function signIn(create: boolean): Promise<void> {
  const { userName, password, apiKey } = credentials();
  if (create) await api.createAccount(userName, password, apiKey).catch((err: unknown) => refusedInvitation(err, apiKey));
  const token = await api.login(userName, password);
  state.session = { userName, jwt: token.jwt, expires: token.expires };
  await save('session', state.session);
  el<HTMLInputElement>('password').value = '';
  if (state.profile.identity) await refreshIdentity();
}

/**
 * The service words a missing or wrong key as an operator's "API key (X-Api-Key)"; the person holding the
 * wallet knows it as the invitation key of this form, so say it in those words and show the field.
 */
function refusedInvitation(err: unknown, apiKey: string): never {
  if (!(err instanceof ApiError) || (err.code !== 'api_key_missing' && err.code !== 'api_key_invalid')) throw err;
  el<HTMLDetailsElement>('invitation').open = true;
  throw new Error(
    apiKey === ''
      ? 'This service creates accounts only with an invitation key from its operator: enter it under "Creating an account needs an invitation key?".'
      : 'The service does not know this invitation key: check it with the operator who gave it to you.',
  );
}

async function signOut(): Promise<void> {
  state.session = undefined;
  await save('session', undefined);
}

async function applyForIdentity(): Promise<void> {
  const current = signedIn(state);
  if (!state.key || !current) throw new Error('Make a key and sign in first.');
  const form = el<HTMLFormElement>('apply-form');
  const data = new FormData(form);
  const properties: Record<string, string> = {};
  for (const name of ['FIRST', 'LAST', 'EMAIL', 'COUNTRY']) {
    const value = String(data.get(name) ?? '').trim();
    if (value !== '') properties[name] = name === 'COUNTRY' ? value.toUpperCase() : value;
  }
  if (!properties.FIRST || !properties.LAST) throw new Error('Enter your first and last name.');
  const application: Application = { properties, publicKey: state.key.publicKey };
  const file = el<HTMLInputElement>('attachment').files?.[0];
  if (file) {
    if (file.size > 256 * 1024) throw new Error('The attachment is larger than 256 KiB.');
    application.attachments = [{ fileName: file.name, contentType: file.type, content: await fileAsBase64(file) }];
  }
  // Proof of possession: the application signed with the key it names (docs/agent-api.md).
  const signature = await signText(state.key, applicationText(current.userName, application));
  const { identity } = await api.apply(current.jwt, { ...application, signature });
  state.profile = { identity };
  await save('profile', state.profile);
}

async function refreshIdentity(): Promise<void> {
  const current = signedIn(state);
  if (!state.profile.identity) return;
  if (!current) throw new Error('Sign in to check the state of your identity.');
  const { identity } = await api.identity(current.jwt, state.profile.identity.Id);
  state.profile = { identity };
  await save('profile', state.profile);
}

async function forget(): Promise<void> {
  await clearAll();
  state.key = undefined;
  state.profile = {};
  state.session = undefined;
  requests.close();
}

// ---- signing (request-view.ts) ---------------------------------------------------------------

const requests = new RequestView(state, api, service, refreshIdentity, alertText);

// ---- camera and images (scanner.ts) ----------------------------------------------------------

const scanner = new Scanner((textValue) => requests.open(textValue), alertText);

// ---- start -----------------------------------------------------------------------------------

function wire(): void {
  el('create-key').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, makeKey));
  el('account-form').addEventListener('submit', (e) => {
    e.preventDefault();
    action(el('sign-in'), () => signIn(false));
  });
  el('create-account').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, () => signIn(true)));
  el('sign-out').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, signOut));
  el('apply-form').addEventListener('submit', (e) => {
    e.preventDefault();
    action(el('apply'), applyForIdentity);
  });
  el('refresh').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, refreshIdentity));
  el('forget').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, forget));
  el('link-form').addEventListener('submit', (e) => {
    e.preventDefault();
    action(el('open'), () => requests.open(el<HTMLInputElement>('sign-url').value));
  });
  el('approve').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, () => requests.decide('approve')));
  el('reject').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, () => requests.decide('reject')));
  el('scan').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, async () => (scanner.running ? scanner.stop() : scanner.start())));
  el('qr-file').addEventListener('change', (e) => {
    const input = e.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (file) action(el('open'), () => scanner.readImage(file).finally(() => (input.value = '')));
  });
  const online = () => text('offline', navigator.onLine ? '' : 'Offline: signing needs the network.');
  addEventListener('online', online);
  addEventListener('offline', online);
  online();
}

async function start(): Promise<void> {
  wire();
  [state.key, state.profile, state.session] = await Promise.all([loadKey(), load<Profile>('profile').then((p) => p ?? {}), load<Session>('session')]);
  render();
  void decoderName().then((name) => {
    text('decoder', `QR decoder: ${name}.`);
    document.body.dataset.decoder = name;
  });
  if ('serviceWorker' in navigator) {
    navigator.serviceWorker.register('sw.js', { scope: './' }).catch((err: unknown) => console.warn('wallet: no offline copy:', err));
  }
  // An app link (`#sign=` or `?sign=`) opens its request; the address is cleaned so a reload does not reopen it.
  const linked = signUrlFromLocation(location);
  if (linked) {
    history.replaceState(null, '', location.pathname);
    el<HTMLInputElement>('sign-url').value = linked;
    await requests.open(linked).catch((err: unknown) => alertText(err instanceof Error ? err.message : String(err)));
  }
  document.body.dataset.ready = '1';
}

addEventListener('unhandledrejection', (e) => alertText(e.reason instanceof Error ? e.reason.message : String(e.reason)));
void start().catch((err: unknown) => alertText(err instanceof Error ? err.message : String(err)));
