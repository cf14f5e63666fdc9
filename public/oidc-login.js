// The OpenID Provider's login page (docs/oidc.md "The login page"): the QuickLogin helper asks this
// interaction's own endpoint for codes (`service`), and the result pushed into this tab finishes the login
// at once: no polling. Everything from the wire is put into the page with textContent or as attribute values.
const $ = (id) => document.getElementById(id);
const base = location.pathname.replace(/\/+$/, '');

// Readable names of the claims a site may ask for (docs/oidc.md "Claims").
const CLAIM_LABELS = {
  sub: 'an identifier for you',
  name: 'your name',
  given_name: 'first name',
  middle_name: 'middle name',
  family_name: 'last name',
  birthdate: 'birth date',
  gender: 'gender',
  email: 'e-mail address',
  phone_number: 'phone number',
  address: 'address',
  properties: 'other identity properties',
};

const show = (text) => {
  $('status').textContent = text;
};

// The web wallet on this origin sets this flag once it holds an approved identity (docs/wallet.md).
function walletReady() {
  try {
    return localStorage.getItem('tabwire.wallet') === '1';
  } catch {
    return false;
  }
}

function showCode(code) {
  const src = new URL(code.src, location.href);
  $('qr').src = src.pathname + src.search;
  $('qr').width = code.width;
  $('qr').height = code.height;
  $('qr-link').href = code.signUrl;
  const wallet = `/wallet/#sign=${encodeURIComponent(code.signUrl)}`;
  $('wallet').href = wallet;
  $('same-device').href = walletReady() ? wallet : code.signUrl;
  show('Waiting for your approval…');
}

let finishing = false;
async function finish() {
  if (finishing) return;
  finishing = true;
  show('Approved. Logging you in…');
  try {
    const response = await fetch(`${base}/complete`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ tab: window.Events.tabId }),
    });
    const answer = await response.json().catch(() => ({}));
    if (response.ok && typeof answer.redirectTo === 'string') {
      location.assign(answer.redirectTo);
      return;
    }
    show(answer.detail ?? `The login could not be finished (${response.status}).`);
  } catch (err) {
    show(`The login could not be finished: ${err instanceof Error ? err.message : String(err)}`);
  }
  finishing = false;
}

async function start() {
  const response = await fetch(`${base}/view`, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  const view = await response.json().catch(() => ({}));
  if (!response.ok) {
    $('waiting').hidden = true;
    $('title').textContent = 'This login has ended';
    $('lead').textContent = view.detail ?? 'Go back to the site and start again.';
    return;
  }
  $('title').textContent = `Log in to ${view.clientName}`;
  $('site').textContent = view.site;
  $('claims').textContent = view.claims.map((claim) => CLAIM_LABELS[claim] ?? claim).join(', ');
  const login = window.Events.quickLogin({
    mode: 'image',
    purpose: view.purpose,
    service: `${location.origin}${base}`,
    refreshMs: 2000,
    onCode: showCode,
    onResult: finish,
    // A rejection ends the login too: the site hears access_denied.
    onRejected: finish,
    stopOnRejected: true,
    onError: (error) => show(`Could not get a code: ${error.message}${error.retrying ? '. Trying again…' : ''}`),
  });
  window.oidcLogin = login;
}

$('qr').addEventListener('load', () => {
  $('qr').hidden = false;
});
void start();
