/**
 * The web wallet (docs/wallet.md): a key made and kept in this browser, an agent account, an identity
 * applied for with that key, and the signing of QuickLogin requests opened from a QR code or a link.
 */
import { Api, ApiError } from './api.js';
import { applicationText, signedText, type Application, type Decision } from './challenge.js';
import { clearAll, load, save } from './db.js';
import { el, fileAsBase64, item, shown, text, time } from './dom.js';
import { createKey, loadKey, signText, type WalletKey } from './keys.js';
import { label } from './labels.js';
import { decoderName } from './qr.js';
import { checkChallenge, checkSignUrl, disclosed, signUrlFromLocation, type IdentityView, type SignInfo } from './request.js';
import { Scanner } from './scanner.js';

/** The flag the service's demo page reads to send "Approve on this device" here (same origin only). */
export const WALLET_FLAG = 'tabwire.wallet';

interface Profile {
  identity?: IdentityView;
}
interface Session {
  userName: string;
  jwt: string;
  /** Unix seconds. */
  expires: number;
}

/** The service: this page's origin, or the one a copy built for another origin names (docs/wallet.md). */
const service = new URL(document.querySelector<HTMLMetaElement>('meta[name="tabwire-service"]')?.content || location.origin).origin;
const api = new Api(service);

let key: WalletKey | undefined;
let profile: Profile = {};
let session: Session | undefined;
let request: { url: URL; info: SignInfo } | undefined;

const now = (): number => Math.floor(Date.now() / 1000);
const signedIn = (): Session | undefined => (session && session.expires > now() + 5 ? session : undefined);

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
  shown('apply-form', identity === undefined && key !== undefined && signedIn() !== undefined);
  shown('identity-none', identity === undefined && (key === undefined || signedIn() === undefined));
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
  shown('key-none', key === undefined);
  shown('key-info', key !== undefined);
  if (key) text('key-public', key.publicKey);
  const current = signedIn();
  shown('account-form', current === undefined);
  shown('account-info', current !== undefined);
  if (current) {
    text('account-name', current.userName);
    time('account-expires', current.expires);
  }
  renderIdentity(profile.identity);
  // The demo page on this origin sends same-device approvals here once the wallet can sign.
  if (profile.identity?.State === 'Approved' && key) localStorage.setItem(WALLET_FLAG, '1');
  else localStorage.removeItem(WALLET_FLAG);
  renderRequestButtons();
}

// ---- key, account, identity ----------------------------------------------------------------

async function makeKey(): Promise<void> {
  key = await createKey();
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
  if (create) await api.createAccount(userName, password, apiKey);
  const token = await api.login(userName, password);
  session = { userName, jwt: token.jwt, expires: token.expires };
  await save('session', session);
  el<HTMLInputElement>('password').value = '';
  if (profile.identity) await refreshIdentity();
}

async function signOut(): Promise<void> {
  session = undefined;
  await save('session', undefined);
}

async function applyForIdentity(): Promise<void> {
  const current = signedIn();
  if (!key || !current) throw new Error('Make a key and sign in first.');
  const form = el<HTMLFormElement>('apply-form');
  const data = new FormData(form);
  const properties: Record<string, string> = {};
  for (const name of ['FIRST', 'LAST', 'EMAIL', 'COUNTRY']) {
    const value = String(data.get(name) ?? '').trim();
    if (value !== '') properties[name] = name === 'COUNTRY' ? value.toUpperCase() : value;
  }
  if (!properties.FIRST || !properties.LAST) throw new Error('Enter your first and last name.');
  const application: Application = { properties, publicKey: key.publicKey };
  const file = el<HTMLInputElement>('attachment').files?.[0];
  if (file) {
    if (file.size > 256 * 1024) throw new Error('The attachment is larger than 256 KiB.');
    application.attachments = [{ fileName: file.name, contentType: file.type, content: await fileAsBase64(file) }];
  }
  // Proof of possession: the application signed with the key it names (docs/agent-api.md).
  const signature = await signText(key, applicationText(current.userName, application));
  const { identity } = await api.apply(current.jwt, { ...application, signature });
  profile = { identity };
  await save('profile', profile);
}

async function refreshIdentity(): Promise<void> {
  const current = signedIn();
  if (!profile.identity) return;
  if (!current) throw new Error('Sign in to check the state of your identity.');
  const { identity } = await api.identity(current.jwt, profile.identity.Id);
  profile = { identity };
  await save('profile', profile);
}

async function forget(): Promise<void> {
  await clearAll();
  key = undefined;
  profile = {};
  session = undefined;
  request = undefined;
  shown('request', false);
}

// ---- signing ---------------------------------------------------------------------------------

/** Why this wallet cannot sign the open request, or undefined when it can. */
function refusal(): string | undefined {
  if (!request) return undefined;
  if (!key) return 'Make a key first (step 1).';
  const identity = profile.identity;
  if (!identity) return 'Apply for an identity first (step 3).';
  if (identity.State === 'Created') return 'Your identity is waiting for the operator\'s approval; it cannot sign yet.';
  if (identity.State !== 'Approved') return `Your identity is ${identity.State}; it cannot sign.`;
  // The expiry is not checked against this device's clock, which may be off: the service decides (410).
  return undefined;
}

function renderRequestButtons(): void {
  const why = refusal();
  const settled = el('request-outcome').textContent !== '';
  text('request-refusal', why ?? '');
  el<HTMLButtonElement>('approve').disabled = why !== undefined || settled;
  el<HTMLButtonElement>('reject').disabled = why !== undefined || settled;
}

function showRequest(url: URL, info: SignInfo): void {
  request = { url, info };
  // Who asks comes first and large: the person, not the service, can tell bank.example from bank-example.top.
  text('request-origin', info.origin ?? 'A program without a web origin');
  text(
    'request-origin-note',
    info.origin === null
      ? 'The request did not come from a web page. Approve only if you started it yourself.'
      : 'Check this is the site you are using right now. Approve only then.',
  );
  text('request-purpose', info.purpose);
  const identity = profile.identity;
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
  renderRequestButtons();
  const card = el('request');
  card.scrollIntoView({ block: 'start' });
  card.focus();
}

async function openRequest(textValue: string): Promise<void> {
  alertText('');
  shown('request', false);
  request = undefined;
  const url = checkSignUrl(textValue, service);
  const info = await api.signInfo(url);
  checkChallenge(info, url);
  if (profile.identity?.State === 'Created' && signedIn()) await refreshIdentity().catch(() => undefined);
  showRequest(url, info);
}

async function decide(decision: Decision): Promise<void> {
  const why = refusal();
  if (why || !request || !key || !profile.identity) throw new Error(why ?? 'Nothing to sign.');
  const { url, info } = request;
  const signature = await signText(key, signedText(info.challenge, profile.identity.Id, decision));
  try {
    const answer = await api.decide(url, profile.identity.Id, signature, decision, info.binding);
    text('request-outcome', answer.state === 'approved' ? 'Approved. You can return to the page that asked.' : 'Rejected. The page that asked has been told.');
  } catch (err) {
    if (err instanceof ApiError) text('request-outcome', `Not signed: ${err.message}`);
    else throw err;
  }
}

// ---- camera and images (scanner.ts) ----------------------------------------------------------

const scanner = new Scanner(openRequest, alertText);

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
    action(el('open'), () => openRequest(el<HTMLInputElement>('sign-url').value));
  });
  el('approve').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, () => decide('approve')));
  el('reject').addEventListener('click', (e) => action(e.currentTarget as HTMLButtonElement, () => decide('reject')));
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
  [key, profile, session] = await Promise.all([loadKey(), load<Profile>('profile').then((p) => p ?? {}), load<Session>('session')]);
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
    await openRequest(linked).catch((err: unknown) => alertText(err instanceof Error ? err.message : String(err)));
  }
  document.body.dataset.ready = '1';
}

addEventListener('unhandledrejection', (e) => alertText(e.reason instanceof Error ? e.reason.message : String(e.reason)));
void start().catch((err: unknown) => alertText(err instanceof Error ? err.message : String(err)));
