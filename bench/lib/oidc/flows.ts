/**
 * The two logins bench/oidc-login.ts compares, each as the list of steps a browser, a signing app and (for
 * OpenID Connect) a relying party's server take, so a login can be run whole or step by step over many
 * logins at once (bench/lib/oidc/rounds.ts):
 *
 *   QuickLogin: the page's tab (WebSocket, Register), POST /QuickLogin in `image` mode as the demo page asks,
 *   the PNG, the signing app's GET of the signUrl and its signed POST, SignatureReceived at the tab.
 *
 *   OpenID Connect (docs/oidc.md): GET /oidc/auth (303 to the login page), the login page, its /view, the
 *   page's tab, its QR request (`image`, as public/oidc-login.js asks) and PNG, the same signing, the page's
 *   /complete, the provider's redirect to the relying party with the code, the code exchanged at /oidc/token
 *   (client_secret_basic and PKCE), and /oidc/me with the access token.
 *
 * Static files (the pages' scripts, the HTML of the relying party's own page) are left out of both: a
 * browser has them cached. Closing the tab is the last step of both (the page navigates away).
 */
import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { fetchSignInfo, postDecision } from '../../../src/cli/signer.js';
import type { SignInfo } from '../../../src/quicklogin/quicklogin.js';
import { expect } from '../common.js';
import { CookieJar, PageTab } from './browser.js';

/** What the service and the signer need to know, fixed for a run. */
export interface FlowContext {
  port: number;
  /** The service's public origin (http://127.0.0.1:<port>): the pages' Origin and the issuer's base. */
  origin: string;
  signer: { legalId: string; key: KeyObject };
  client: { clientId: string; clientSecret: string; redirectUri: string };
}

/** One login's state, filled in as its steps run. */
export interface LoginState {
  jar: CookieJar;
  tab?: PageTab;
  uid?: string;
  signUrl?: string;
  png?: string;
  info?: SignInfo;
  state: string;
  nonce: string;
  verifier: string;
  location?: string;
  code?: string;
  accessToken?: string;
}

export interface Step {
  name: string;
  /** HTTP requests and WebSocket messages the step sends the service (for the "per login" table). */
  requests: number;
  run(ctx: FlowContext, s: LoginState): Promise<void>;
}

export interface LoginFlow {
  name: string;
  steps: Step[];
}

export function freshLogin(): LoginState {
  return { jar: new CookieJar(), state: randomBytes(8).toString('base64url'), nonce: randomBytes(8).toString('base64url'), verifier: randomBytes(32).toString('base64url') };
}

const base = (ctx: FlowContext): string => `http://127.0.0.1:${ctx.port}`;

/** A request whose body is read (so the connection is free again) and whose status is checked. */
async function call(url: string, init: RequestInit, status: number, what: string): Promise<{ response: Response; text: string }> {
  const response = await fetch(url, { redirect: 'manual', ...init });
  const text = await response.text();
  expect(response.status === status, `${what} answered ${response.status}, not ${status}: ${text.slice(0, 200)}`);
  return { response, text };
}

const signing: Step[] = [
  {
    name: 'QR image (GET .png)',
    requests: 1,
    async run(ctx, s) {
      await call(s.png!, {}, 200, 'GET QR png');
    },
  },
  {
    name: 'signing app GETs the signUrl',
    requests: 1,
    async run(_ctx, s) {
      s.info = await fetchSignInfo(s.signUrl!);
    },
  },
  {
    name: 'signed POST -> SignatureReceived',
    requests: 1,
    async run(ctx, s) {
      const answer = await postDecision(s.signUrl!, s.info!, ctx.signer.legalId, ctx.signer.key, 'approve');
      expect(answer.state === 'approved', `signature answered ${JSON.stringify(answer)}`);
      await s.tab!.next('SignatureReceived');
    },
  },
];

const closeTab: Step = {
  name: 'page leaves (tab closes)',
  requests: 0,
  async run(_ctx, s) {
    await s.tab!.close();
  },
};

/** A QR answer in `image` mode: the signUrl and the PNG's address. */
function takeQr(s: LoginState, text: string): void {
  const body = JSON.parse(text) as { signUrl?: string; src?: string };
  expect(typeof body.signUrl === 'string' && typeof body.src === 'string', `QR answer without signUrl/src: ${text.slice(0, 200)}`);
  s.signUrl = body.signUrl;
  s.png = body.src;
}

export const quickLoginFlow: LoginFlow = {
  name: 'QuickLogin',
  steps: [
    {
      name: 'page tab (WebSocket, Register)',
      requests: 2,
      async run(ctx, s) {
        s.tab = await PageTab.open(ctx.port, ctx.origin);
      },
    },
    {
      name: 'POST /QuickLogin',
      requests: 1,
      async run(ctx, s) {
        const headers = { cookie: s.tab!.cookie, origin: ctx.origin, 'content-type': 'application/json', accept: 'application/json' };
        const body = JSON.stringify({ serviceId: '', tab: s.tab!.tabId, mode: 'image', purpose: 'Log in to the shop' });
        takeQr(s, (await call(`${base(ctx)}/QuickLogin`, { method: 'POST', headers, body }, 200, 'POST /QuickLogin')).text);
      },
    },
    ...signing,
    closeTab,
  ],
};

export const oidcFlow: LoginFlow = {
  name: 'OpenID Connect',
  steps: [
    {
      name: 'GET /oidc/auth (303)',
      requests: 1,
      async run(ctx, s) {
        const challenge = createHash('sha256').update(s.verifier).digest('base64url');
        const query = new URLSearchParams({
          client_id: ctx.client.clientId,
          response_type: 'code',
          scope: 'openid profile email',
          redirect_uri: ctx.client.redirectUri,
          state: s.state,
          nonce: s.nonce,
          code_challenge: challenge,
          code_challenge_method: 'S256',
        });
        const { response } = await call(`${base(ctx)}/oidc/auth?${query}`, {}, 303, 'GET /oidc/auth');
        s.jar.take(response);
        const uid = /\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(new URL(response.headers.get('location') ?? '', ctx.origin).pathname)?.[1];
        expect(uid !== undefined, `GET /oidc/auth did not lead to a login page: ${response.headers.get('location')}`);
        s.uid = uid;
      },
    },
    {
      name: 'login page + /view',
      requests: 2,
      async run(ctx, s) {
        const { response } = await call(`${base(ctx)}/oidc/interaction/${s.uid}`, { headers: { cookie: s.jar.header() } }, 200, 'login page');
        s.jar.take(response);
        await call(`${base(ctx)}/oidc/interaction/${s.uid}/view`, { headers: { cookie: s.jar.header(), accept: 'application/json' } }, 200, 'GET /view');
      },
    },
    {
      name: 'page tab (WebSocket, Register)',
      requests: 2,
      async run(ctx, s) {
        const session = s.jar.get('tabwire_sid');
        expect(session !== undefined, 'the login page handed out no tabwire_sid');
        s.tab = await PageTab.open(ctx.port, ctx.origin, `tabwire_sid=${session}`);
      },
    },
    {
      name: 'POST /oidc/interaction/{uid}/QuickLogin',
      requests: 1,
      async run(ctx, s) {
        const headers = { cookie: s.jar.header(), origin: ctx.origin, 'content-type': 'application/json', accept: 'application/json' };
        const body = JSON.stringify({ serviceId: '', tab: s.tab!.tabId, mode: 'image', purpose: 'ignored' });
        takeQr(s, (await call(`${base(ctx)}/oidc/interaction/${s.uid}/QuickLogin`, { method: 'POST', headers, body }, 200, 'interaction QuickLogin')).text);
      },
    },
    ...signing,
    {
      name: 'POST /complete',
      requests: 1,
      async run(ctx, s) {
        const headers = { cookie: s.jar.header(), origin: ctx.origin, 'content-type': 'application/json', accept: 'application/json' };
        const { text } = await call(`${base(ctx)}/oidc/interaction/${s.uid}/complete`, { method: 'POST', headers, body: JSON.stringify({ tab: s.tab!.tabId }) }, 200, 'POST /complete');
        s.location = (JSON.parse(text) as { redirectTo: string }).redirectTo;
      },
    },
    closeTab,
    {
      name: 'resume (303) -> RP callback',
      requests: 1,
      async run(ctx, s) {
        // The provider's redirects (usually one: /oidc/auth/<uid>) until one leaves /oidc/: the relying party's callback.
        let next = new URL(s.location!, ctx.origin);
        for (let hops = 0; next.pathname.startsWith('/oidc/'); hops++) {
          expect(hops < 5, 'too many redirects');
          const response = await fetch(`${base(ctx)}${next.pathname}${next.search}`, { redirect: 'manual', headers: { cookie: s.jar.header() } });
          await response.arrayBuffer();
          s.jar.take(response);
          const to = response.headers.get('location');
          expect(to !== null, `${next.pathname} answered ${response.status} without a redirect`);
          next = new URL(to, ctx.origin);
        }
        expect(next.searchParams.get('state') === s.state && next.searchParams.has('code'), `the callback has no code or the wrong state: ${next.search.slice(0, 200)}`);
        s.code = next.searchParams.get('code')!;
      },
    },
    {
      name: 'RP: POST /oidc/token',
      requests: 1,
      async run(ctx, s) {
        const headers = {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: `Basic ${Buffer.from(`${encodeURIComponent(ctx.client.clientId)}:${encodeURIComponent(ctx.client.clientSecret)}`).toString('base64')}`,
        };
        const body = new URLSearchParams({ grant_type: 'authorization_code', code: s.code!, redirect_uri: ctx.client.redirectUri, code_verifier: s.verifier });
        const tokens = JSON.parse((await call(`${base(ctx)}/oidc/token`, { method: 'POST', headers, body }, 200, 'POST /oidc/token')).text) as Record<string, unknown>;
        expect(typeof tokens.id_token === 'string' && typeof tokens.access_token === 'string', 'the token answer has no id_token or access_token');
        s.accessToken = tokens.access_token as string;
      },
    },
    {
      name: 'RP: GET /oidc/me',
      requests: 1,
      async run(ctx, s) {
        const { text } = await call(`${base(ctx)}/oidc/me`, { headers: { authorization: `Bearer ${s.accessToken}` } }, 200, 'GET /oidc/me');
        expect((JSON.parse(text) as { sub?: string }).sub === ctx.signer.legalId, `userinfo names another subject: ${text.slice(0, 200)}`);
      },
    },
  ],
};

/** HTTP requests and WebSocket messages one login sends the service. */
export const requestsPerLogin = (flow: LoginFlow): number => flow.steps.reduce((n, s) => n + s.requests, 0);
