/**
 * The HTTP requests of a waiting page, with the headers a browser sends: the QR request (POST
 * /QuickLogin, built once per tab) and, in image mode, the GET of the code's PNG.
 */
import { assertSetup, state, type Setup } from './state.js';

const PURPOSE = 'Log in to the tabwire demo';
/** The User-Agent of every tab, in its requests and its WebSocket handshake: a desktop Chrome's. */
export const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';

const httpHead = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;

/** A tab's whole POST /QuickLogin request: built once, as its body and cookie never change. */
export function qrRequest(s: Setup, tabId: string, cookie: string): Buffer {
  // The body the demo page sends (image mode), or the reference pages' four fields (text mode).
  const body = Buffer.from(
    JSON.stringify(
      s.mode === 'image'
        ? { mode: 'image', purpose: PURPOSE, serviceId: '', tab: tabId, propertyFilter: 'FIRST,LAST,COUNTRY,EMAIL' }
        : { serviceId: '', tab: tabId, mode: 'text', purpose: PURPOSE },
    ),
  );
  const head = httpHead([
    'POST /QuickLogin HTTP/1.1',
    `Host: 127.0.0.1:${s.port}`,
    `User-Agent: ${USER_AGENT}`,
    'Accept: */*',
    'Accept-Language: en-US,en;q=0.9',
    'Content-Type: application/json',
    `Origin: ${state.origin}`,
    `Referer: ${state.origin}/`,
    `Cookie: ${cookie}`,
    `Content-Length: ${body.length}`,
  ]);
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** The GET of a code's PNG (`path` from the answer's `src`), as the page's <img> loads it. */
export function pngRequest(path: string, cookie: string): Buffer {
  const s = assertSetup();
  return Buffer.from(
    httpHead([
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${s.port}`,
      `User-Agent: ${USER_AGENT}`,
      'Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8',
      'Accept-Language: en-US,en;q=0.9',
      `Referer: ${state.origin}/`,
      `Cookie: ${cookie}`,
    ]),
    'latin1',
  );
}
