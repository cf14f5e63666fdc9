/**
 * The encoder thread's program (qr-stock.ts starts it): for each order of codes, the whole answer of
 * each, made by the same `QrAnswers` a request uses, sent back as one transferred buffer. Orders come
 * only from the stock in the same process; nothing here reads the network.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { QrAnswers } from './qr-answer.js';
import type { StockDelivery, StockOrder, StockThreadData } from './qr-stock.js';

const port = parentPort;
if (!port) throw new Error('qr-stock-thread.ts runs as a worker thread only');
const answers = new QrAnswers(workerData as StockThreadData);

port.on('message', (order: StockOrder) => {
  const parts = order.codes.map((code) => answers.encodedAnswer(order.mode, code));
  // Its own ArrayBuffer (not a slice of the pool), so it can be transferred whole.
  const data = Buffer.allocUnsafeSlow(parts.reduce((sum, part) => sum + part.length, 0));
  const ends = new Uint32Array(parts.length);
  let end = 0;
  parts.forEach((part, i) => {
    end += part.copy(data, end);
    ends[i] = end;
  });
  const delivery: StockDelivery = { id: order.id, data: data.buffer, ends };
  port.postMessage(delivery, [data.buffer, ends.buffer]);
});
