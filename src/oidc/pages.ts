import type { ErrorOut, KoaContextWithOIDC } from 'oidc-provider';

/**
 * The few pages the OpenID Provider itself renders (an error a relying party cannot be told, the logout
 * question, the logged-out note), in the service's look. Every value from the request is escaped.
 */

const escape = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

// No script at all on these pages; the logout form posts to the provider itself.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

interface KoaLike {
  type: string;
  body: unknown;
  set(name: string, value: string): void;
}

function send(ctx: KoaContextWithOIDC, title: string, body: string): void {
  const koa = ctx as unknown as KoaLike;
  koa.set('content-security-policy', CSP);
  koa.set('x-content-type-options', 'nosniff');
  koa.set('referrer-policy', 'no-referrer');
  koa.type = 'html';
  koa.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · tabwire</title><link rel="stylesheet" href="/style.css"></head>
<body><main class="card"><h1>${escape(title)}</h1>${body}</main></body></html>`;
}

/** An error the provider may not send to the relying party (an unknown client or redirect URI, RFC 6749 §4.1.2.1). */
export function errorPage(ctx: KoaContextWithOIDC, out: ErrorOut): void {
  send(
    ctx,
    'This login cannot go on',
    `<p><code>${escape(out.error)}</code>${out.error_description ? `: ${escape(out.error_description)}` : ''}</p>
<p>Go back to the site you came from and start again. If it keeps happening, tell the site's operator.</p>`,
  );
}

/** RP-initiated logout asks before ending the session (OpenID Connect RP-Initiated Logout §2). */
export function logoutPage(ctx: KoaContextWithOIDC, form: string): void {
  send(
    ctx,
    'Log out?',
    `${form}<p>A site asks to log you out of this login service.</p>
<p><button type="submit" form="op.logoutForm" name="logout" value="yes" autofocus>Log out</button>
<button type="submit" form="op.logoutForm">Stay logged in</button></p>`,
  );
}

/** After a logout with no post-logout redirect. */
export function loggedOutPage(ctx: KoaContextWithOIDC): void {
  send(ctx, 'Logged out', '<p>You are logged out of this login service. You may close this page.</p>');
}
