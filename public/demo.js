// The demo page: QuickLogin with the client's helper (`Events.quickLogin`, docs/sdk.md): a new code every 2 s,
// stopped by the result. Everything from the wire is put into the page with textContent or as attribute
// values, never as HTML.
const $ = (id) => document.getElementById(id);
const PURPOSE = 'Log in to the tabwire demo';
const PROPERTIES = 'FIRST,LAST,COUNTRY,EMAIL';

// Readable labels for the identity property names (docs/sdk.md "Property labels"); an unknown name is shown as sent.
const LABELS = {
  FIRST: 'First name',
  MIDDLE: 'Middle name',
  LAST: 'Last name',
  PNR: 'Personal number',
  NATIONALITY: 'Nationality',
  GENDER: 'Gender',
  BDAY: 'Birth day',
  BMONTH: 'Birth month',
  BYEAR: 'Birth year',
  ADDR: 'Address',
  ADDR2: 'Address (line 2)',
  ZIP: 'Postal code',
  AREA: 'Area',
  CITY: 'City',
  REGION: 'Region',
  COUNTRY: 'Country',
  EMAIL: 'E-mail',
  PHONE: 'Phone',
  JID: 'XMPP address',
  ORGNAME: 'Organisation',
  ORGNR: 'Organisation number',
  ORGDEPT: 'Department',
  ORGROLE: 'Role',
  ORGADDR: 'Organisation address',
  ORGADDR2: 'Organisation address (line 2)',
  ORGZIP: 'Organisation postal code',
  ORGAREA: 'Organisation area',
  ORGCITY: 'Organisation city',
  ORGREGION: 'Organisation region',
  ORGCOUNTRY: 'Organisation country',
};
const COUNTRY_PROPERTIES = new Set(['COUNTRY', 'NATIONALITY', 'ORGCOUNTRY']);
const regions = typeof Intl.DisplayNames === 'function' ? new Intl.DisplayNames(['en'], { type: 'region' }) : undefined;

/** A country code as its English name with the code ("United Kingdom (GB)"); anything else unchanged. */
function propertyValue(name, value) {
  const text = String(value);
  if (!COUNTRY_PROPERTIES.has(name) || !regions || !/^[A-Z]{2}$/.test(text)) return text;
  try {
    const country = regions.of(text);
    return country && country !== text ? `${country} (${text})` : text;
  } catch {
    return text;
  }
}

// A notice (a rejection, a refused request) stays until the person does something next: opens the
// approval page, signs in again, or a result arrives. New codes keep coming underneath it.
let notice = false;

function show(text) {
  $('status').textContent = text;
}

function noticeShown(text) {
  notice = true;
  $('status').classList.add('notice');
  show(text);
}

function nextAction() {
  if (!notice) return;
  notice = false;
  $('status').classList.remove('notice');
  show('Waiting for a signature…');
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
  nextAction();
  const body = $('identity').tBodies[0];
  body.replaceChildren();
  const properties = typeof result.Properties === 'object' && result.Properties !== null ? result.Properties : {};
  for (const [name, value] of Object.entries(properties)) body.append(row(LABELS[name] ?? name, propertyValue(name, value)));
  body.append(row('Identity', result.Id));
  body.append(row('State', result.State));
  body.append(row('Provider', result.Provider));
  body.append(row('Signed for', result.Purpose));
  if (typeof result.Created === 'number') body.append(row('Created', new Date(result.Created * 1000).toISOString()));
  $('result-title').textContent = 'Signed in';
  $('waiting').hidden = true;
  $('result').hidden = false;
}

// The web wallet on this origin sets this flag once it holds an approved identity (docs/wallet.md); then
// "Approve on this device" opens the request in the wallet (an app link). Without it the link opens the
// approval page, which signs with the development identity on loopback deployments only.
const WALLET_FLAG = 'tabwire.wallet';
function walletReady() {
  try {
    return localStorage.getItem(WALLET_FLAG) === '1';
  } catch {
    return false; // storage blocked: no wallet on this browser
  }
}

function sameDeviceLink(signUrl) {
  if (!walletReady()) return signUrl;
  $('same-device').textContent = 'Approve with the wallet on this device';
  return `/wallet/#sign=${encodeURIComponent(signUrl)}`;
}

function showCode(code) {
  // The page is served by the service itself, possibly under another loopback name than the public
  // base (localhost vs 127.0.0.1): load the image from this page's own origin (and its CSP allows it).
  const src = new URL(code.src, location.href);
  $('qr').src = src.pathname + src.search;
  $('qr').width = code.width;
  $('qr').height = code.height;
  $('qr-link').href = code.signUrl;
  $('same-device').href = sameDeviceLink(code.signUrl);
  if (!notice) show('Waiting for a signature…');
}

// The image is shown only once a code has loaded: never a broken-image icon while the first code is on its way.
$('qr').addEventListener('load', () => {
  $('qr').hidden = false;
});
// Opening the approval page is the person's next action.
$('qr-link').addEventListener('click', nextAction);
$('same-device').addEventListener('click', nextAction);

show('Connecting…');
const login = window.Events.quickLogin({
  mode: 'image',
  purpose: PURPOSE,
  propertyFilter: PROPERTIES,
  refreshMs: 2000,
  onCode: showCode,
  onResult: showIdentity,
  onRejected: () => noticeShown('The request was rejected. Scan the new code to try again.'),
  onError: (error) => {
    if (!error.retrying) noticeShown(`Could not get a code: ${error.message}`);
    else if (!notice) show(`Could not get a code: ${error.message}. Trying again…`);
  },
});
// For tests and the curious: the running helper.
window.demoLogin = login;

$('again').addEventListener('click', () => {
  nextAction();
  $('result').hidden = true;
  $('waiting').hidden = false;
  login.restart();
});
setInterval(() => {
  $('transport').textContent = `tab ${window.Events.tabId} · ${window.Events.stats.transport}`;
}, 1000);
