import type { Dispatcher } from 'undici';

/** What a callback attempt needs of the backend's answer. */
export interface PostAnswer {
  status: number;
  retryAfter: string | undefined;
}

/** The whole exchange took longer than allowed; `failureReason` reads the name, as for AbortSignal.timeout. */
const timeoutError = (ms: number): Error => Object.assign(new Error(`no complete answer within ${ms} ms`), { name: 'TimeoutError' });

/**
 * One POST through `dispatcher` (undici's handler API rather than `request`): a backend's answer matters
 * only by its status and Retry-After, so no response stream is made; the body is read and dropped, and
 * once more than `maxResponseBytes` arrived the connection is closed and the status stands. A redirect is
 * not followed (it is just a status). The whole exchange, connecting included, ends within `timeoutMs`
 * (one timer: about half the CPU of `request` with an AbortSignal per attempt, docs/benchmarks.md#callback-delivery).
 */
export function postOnce(
  dispatcher: Dispatcher,
  url: URL,
  headers: Record<string, string>,
  body: string,
  o: { timeoutMs: number; maxResponseBytes: number },
): Promise<PostAnswer> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | undefined;
    let settled = false;
    let answer: PostAnswer | undefined;
    let received = 0;
    const finish = (err: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Once the status arrived it stands, whatever happens to the body after (as with a dropped stream).
      if (answer) resolve(answer);
      else reject(err ?? new Error('the exchange ended without an answer'));
    };
    const timer = setTimeout(() => {
      const err = timeoutError(o.timeoutMs);
      finish(err);
      // Not started yet (still connecting): aborted as soon as it starts.
      controller?.abort(err);
    }, o.timeoutMs);
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(timeoutError(o.timeoutMs));
      },
      onResponseStart(_c, statusCode, responseHeaders) {
        if (statusCode < 200) return; // informational; the final answer follows
        const value = responseHeaders['retry-after'];
        answer = { status: statusCode, retryAfter: Array.isArray(value) ? value[0] : value };
      },
      onResponseData(c, chunk) {
        received += chunk.length;
        if (received > o.maxResponseBytes) {
          finish(undefined);
          c.abort(new Error(`answer longer than ${o.maxResponseBytes} bytes`));
        }
      },
      onResponseEnd() {
        finish(undefined);
      },
      onResponseError(_c, err) {
        finish(err);
      },
    };
    dispatcher.dispatch({ origin: url.origin, path: `${url.pathname}${url.search}`, method: 'POST', headers, body }, handler);
  });
}
