/**
 * A tab's QR refresh: POST /QuickLogin over the pool (then the PNG in image mode), the answer checked
 * as the page uses it, and the next refresh `periodMs` after the answer.
 */
import { performance } from 'node:perf_hooks';
import { noteError, recordPost, recordRefresh, recordStart } from './readings.js';
import { pngRequest } from './requests.js';
import { assertSetup, state } from './state.js';
import type { Tab } from './tabs.js';

const PNG_FIRST_BYTE = 0x89;

function finish(tab: Tab, error?: { kind: string; detail: string }): void {
  const started = tab.since;
  tab.since = 0;
  if (error) noteError(error.kind, error.detail);
  else recordRefresh(performance.now() - started);
  // The demo page asks again 2 s after every answer, an error included.
  if (tab.running) tab.refresh = setTimeout(refresh, assertSetup().periodMs, tab);
}

/** Starts a refresh of a running tab now (its timer fired, or its page just loaded). */
export function refresh(tab: Tab): void {
  tab.refresh = undefined;
  if (!tab.running || !state.pool) return;
  tab.since = performance.now();
  recordStart(tab.since);
  state.pool.request({
    bytes: tab.post,
    answer: (status, _head, body) => onQrAnswer(tab, status, body),
    fail: (message) => finish(tab, { kind: 'connection', detail: message }),
  });
}

function onQrAnswer(tab: Tab, status: number, body: Buffer): void {
  if (status !== 200) return finish(tab, { kind: `POST ${status}`, detail: body.toString('utf8', 0, Math.min(body.length, 300)) });
  let answer: { signUrl?: unknown; text?: unknown; src?: unknown; width?: unknown };
  try {
    answer = JSON.parse(body.toString('utf8')) as typeof answer;
  } catch {
    return finish(tab, { kind: 'POST body', detail: 'not JSON' });
  }
  if (typeof answer.signUrl !== 'string') return finish(tab, { kind: 'POST body', detail: 'no signUrl' });
  if (assertSetup().mode === 'text') {
    if (typeof answer.text !== 'string' || answer.text.length === 0) return finish(tab, { kind: 'POST body', detail: 'no text' });
    return finish(tab);
  }
  const src = answer.src;
  const at = typeof src === 'string' ? src.indexOf('/QuickLogin/Qr/') : -1;
  if (typeof src !== 'string' || at < 0 || typeof answer.width !== 'number') return finish(tab, { kind: 'POST body', detail: 'no src/width' });
  recordPost(performance.now() - tab.since);
  state.pool!.request({
    bytes: pngRequest(src.slice(at), tab.cookie),
    answer: (pngStatus, head, png) => {
      if (pngStatus !== 200) return finish(tab, { kind: `PNG ${pngStatus}`, detail: png.toString('utf8', 0, Math.min(png.length, 300)) });
      if (!/\r\ncontent-type: image\/png/i.test(head) || png[0] !== PNG_FIRST_BYTE) return finish(tab, { kind: 'PNG body', detail: 'not a PNG' });
      finish(tab);
    },
    fail: (message) => finish(tab, { kind: 'connection', detail: message }),
  });
}
