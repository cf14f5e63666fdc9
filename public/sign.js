// Same-device approval page at the signUrl. Reads the request as JSON from the same address and
// renders it with textContent only. Approve/Reject sign with the service's development identity.
const $ = (id) => document.getElementById(id);
const signUrl = location.origin + location.pathname;

function done(text) {
  $('outcome').textContent = text;
  $('approve').disabled = true;
  $('reject').disabled = true;
}

async function load() {
  const response = await fetch(signUrl, { headers: { Accept: 'application/json' } });
  const body = await response.json();
  if (!response.ok) return done(body.detail ?? 'This request cannot be signed.');
  $('requester').textContent = body.requester ?? 'A client';
  $('purpose').textContent = body.purpose;
  $('expires').textContent = new Date(body.expires * 1000).toLocaleTimeString();
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
