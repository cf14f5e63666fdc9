// Same-device approval page at the signUrl. Reads the request as JSON from the same address and
// renders it with textContent only. Approve/Reject sign with the service's development identity,
// which the page names (GET /QuickLogin/DevIdentity); without one it says so and offers no buttons.
const $ = (id) => document.getElementById(id);
const signUrl = location.origin + location.pathname;

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

async function load() {
  const [response, dev] = await Promise.all([fetch(signUrl, { headers: { Accept: 'application/json' } }), devIdentity().catch(() => undefined)]);
  const body = await response.json();
  if (dev) $('dev-id').textContent = identityName(dev);
  else $('dev-note').textContent = 'This service signs only with a signing app.';
  if (!response.ok) return done(body.detail ?? 'This request cannot be signed.');
  $('requester').textContent = body.requester ?? 'A client';
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
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ decision }),
  });
  const body = await response.json();
  if (!response.ok) return done(body.detail ?? 'Refused.');
  done(body.state === 'approved' ? 'Approved. You can return to the page that asked.' : 'Rejected.');
}

$('approve').addEventListener('click', () => decide('approve'));
$('reject').addEventListener('click', () => decide('reject'));
load().catch((err) => done(err.message));
