// Same-device approval page at the signUrl. Reads the request as JSON from the same address and
// renders it with textContent only. Approve/Reject sign with the service's development identity,
// which the page names (GET /QuickLogin/DevIdentity); without one it says so and offers no buttons.
// A scan-limited code (docs/relay.md) is bound by the first fetch: the page keeps the binding token it
// got for this tab (sessionStorage), so a reload keeps working, and sends it with the decision.
const $ = (id) => document.getElementById(id);
const signUrl = location.origin + location.pathname;
const BINDING_HEADER = 'Tabwire-Binding';
const bindingKey = `tabwire-binding:${location.pathname}`;

/** What the person is told for the refusals of a scan-limited code; other refusals show the service's detail. */
const MESSAGES = {
  code_too_old:
    'This QR code is too old: it must be opened within a few seconds of being shown. Go back to the page that asked and open the code it shows now.',
  code_bound:
    'Another device or app has already opened this request, and only it can answer. If that was not you, do not go on: someone may be trying to log in as you.',
  binding_required: 'This request was opened by another device or app; only it can answer. Open the code the page shows now.',
};

/** The message for a problem+json refusal. */
function refusalMessage(body, fallback) {
  return MESSAGES[body?.code] ?? body?.detail ?? fallback;
}

function storedBinding() {
  try {
    return sessionStorage.getItem(bindingKey) ?? undefined;
  } catch {
    return undefined;
  }
}

function keepBinding(token) {
  try {
    sessionStorage.setItem(bindingKey, token);
  } catch {
    // Storage refused (a private mode): this page view still has the token in memory.
  }
}

let binding = storedBinding();
const withBinding = (headers) => (binding === undefined ? headers : { ...headers, [BINDING_HEADER]: binding });

function done(text) {
  $('outcome').textContent = text;
  $('approve').disabled = true;
  $('reject').disabled = true;
}

/** "Ada Lovelace (ada@example.org), <legal id>" from the development identity's properties. */
function identityName(dev) {
  const p = dev.properties ?? {};
  const name = [p.FIRST, p.MIDDLE, p.LAST].filter((part) => typeof part === 'string' && part !== '').join(' ');
  const email = typeof p.EMAIL === 'string' && p.EMAIL !== '' ? ` (${p.EMAIL})` : '';
  return name === '' ? dev.legalId : `${name}${email}, ${dev.legalId}`;
}

async function devIdentity() {
  const response = await fetch('/QuickLogin/DevIdentity', { headers: { Accept: 'application/json' } });
  return response.ok ? response.json() : undefined;
}

/** No development identity here: no dead buttons, but the ways that do approve (docs/wallet.md, docs/cli.md). */
function showHowToApprove() {
  $('dev-note').textContent = 'This service signs only with a signing app.';
  $('buttons').hidden = true;
  $('how').hidden = false;
  $('wallet-link').href = `/wallet/#sign=${encodeURIComponent(signUrl)}`;
  $('cli-command').textContent = `tabwire sign '${signUrl}' --key FILE`;
}

async function load() {
  const [response, dev] = await Promise.all([
    fetch(signUrl, { headers: withBinding({ Accept: 'application/json' }) }),
    devIdentity().catch(() => undefined),
  ]);
  const body = await response.json();
  if (dev) $('dev-id').textContent = identityName(dev);
  else showHowToApprove();
  if (!response.ok) return done(refusalMessage(body, 'This request cannot be signed.'));
  if (typeof body.binding === 'string') {
    binding = body.binding;
    keepBinding(binding);
  }
  $('requester').textContent = body.requester ?? 'A page without an origin';
  $('origin').textContent = body.origin ?? '';
  $('purpose').textContent = body.purpose;
  $('expires').textContent = new Date(body.expires * 1000).toLocaleTimeString();
  if (!dev) return;
  $('approve').disabled = false;
  $('reject').disabled = false;
}

async function decide(decision) {
  $('approve').disabled = true;
  $('reject').disabled = true;
  const response = await fetch(`${signUrl}/Dev`, {
    method: 'POST',
    headers: withBinding({ 'Content-Type': 'application/json', Accept: 'application/json' }),
    body: JSON.stringify({ decision }),
  });
  const body = await response.json();
  if (!response.ok) return done(refusalMessage(body, 'Refused.'));
  done(body.state === 'approved' ? 'Approved. You can return to the page that asked.' : 'Rejected.');
}

$('approve').addEventListener('click', () => decide('approve'));
$('reject').addEventListener('click', () => decide('reject'));
load().catch((err) => done(err.message));
