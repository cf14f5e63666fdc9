// The demo page: QuickLogin as the reference client does it (new code every 2 s), events through /Events.js.
// Everything from the wire is put into the page with textContent or as attribute values, never as HTML.
const $ = (id) => document.getElementById(id);
const PURPOSE = 'Log in to the tabwire demo';
let refreshTimer;
let signedIn = false;

function show(text) {
  $('status').textContent = text;
}

async function refreshCode() {
  clearTimeout(refreshTimer);
  if (signedIn) return;
  try {
    const response = await fetch('/QuickLogin', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ mode: 'image', purpose: PURPOSE, serviceId: '', tab: window.Events.tabId, propertyFilter: 'FIRST,LAST,COUNTRY,EMAIL' }),
    });
    const body = await response.json();
    if (!response.ok) {
      // Right after load the tab may not be registered yet: ask again soon.
      show(body.code === 'tab_not_registered' ? 'Registering this tab…' : `Could not get a code: ${body.detail}`);
      refreshTimer = setTimeout(refreshCode, body.code === 'tab_not_registered' ? 300 : 2000);
      return;
    }
    // The page is served by the service itself, possibly under another loopback name than the public
    // base (localhost vs 127.0.0.1): load the image from this page's own origin (and its CSP allows it).
    const src = new URL(body.src, location.href);
    $('qr').src = src.pathname + src.search;
    $('qr').width = body.width;
    $('qr').height = body.height;
    $('qr-link').href = body.signUrl;
    $('same-device').href = body.signUrl;
    show('Waiting for a signature…');
  } catch (err) {
    show(`Could not get a code: ${err.message}`);
  }
  refreshTimer = setTimeout(refreshCode, 2000);
}

function row(name, value) {
  const tr = document.createElement('tr');
  const th = document.createElement('th');
  const td = document.createElement('td');
  th.textContent = name;
  td.textContent = String(value);
  tr.append(th, td);
  return tr;
}

function showIdentity(result) {
  if (typeof result !== 'object' || result === null || typeof result.Id !== 'string') return;
  signedIn = true;
  clearTimeout(refreshTimer);
  const body = $('identity').tBodies[0];
  body.replaceChildren();
  const properties = typeof result.Properties === 'object' && result.Properties !== null ? result.Properties : {};
  for (const [name, value] of Object.entries(properties)) body.append(row(name, value));
  body.append(row('Identity', result.Id));
  body.append(row('State', result.State));
  body.append(row('Provider', result.Provider));
  body.append(row('Signed for', result.Purpose));
  if (typeof result.Created === 'number') body.append(row('Created', new Date(result.Created * 1000).toISOString()));
  $('result-title').textContent = 'Signed in';
  $('waiting').hidden = true;
  $('result').hidden = false;
}

// The image is shown only once a code has loaded: never a broken-image icon while the first code is on its way.
$('qr').addEventListener('load', () => {
  $('qr').hidden = false;
});
window.Events.on('SignatureReceived', showIdentity);
window.Events.on('SignatureRejected', () => show('The request was rejected. A new code follows.'));
$('again').addEventListener('click', () => {
  signedIn = false;
  $('result').hidden = true;
  $('waiting').hidden = false;
  refreshCode();
});
setInterval(() => {
  $('transport').textContent = `tab ${window.Events.tabId} · ${window.Events.stats.transport}`;
}, 1000);
refreshCode();
