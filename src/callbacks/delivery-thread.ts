/**
 * The delivery thread's program (thread-transport.ts starts it): signs and POSTs the attempts it is sent,
 * each with the same `sendAttempt` the event loop uses, and answers them in batches. Every connection's
 * address is looked up by the event loop (the connect-time check of address-policy.ts, with the
 * deployment's resolver), so what may be connected to is decided in one place. Attempts come only from
 * the transport in the same process.
 */
import { sign } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { callbackAgent, sendAttempt, type ConnectLookup } from './attempt.js';
import type { FromThread, ThreadData, ToThread } from './thread-transport.js';

const port = parentPort;
if (!port) throw new Error('delivery-thread.ts runs as a worker thread only');
const data = workerData as ThreadData;

type LookupCallback = Parameters<ConnectLookup>[2];
/** Lookups asked of the event loop, by number, with what net.connect wants back. */
const lookups = new Map<number, { all: boolean; callback: LookupCallback }>();
let nextLookup = 0;
const lookup: ConnectLookup = (hostname, options, callback) => {
  const seq = nextLookup++;
  lookups.set(seq, { all: options.all === true, callback });
  port.postMessage({ kind: 'lookup', seq, hostname } satisfies FromThread);
};

const agent = callbackAgent(lookup, data);
// Synchronous: this thread has nothing else to do meanwhile.
const signEd25519 = async (content: Buffer): Promise<Buffer> => sign(null, content, data.key);

/** Answers go back once per turn of this thread's loop, as one message. */
let answers: Extract<FromThread, { kind: 'answers' }>['answers'] = [];
const flush = (): void => {
  port.postMessage({ kind: 'answers', answers } satisfies FromThread);
  answers = [];
};

port.on('message', (message: ToThread) => {
  if (message.kind === 'lookup') {
    const asked = lookups.get(message.seq);
    if (asked === undefined) return;
    lookups.delete(message.seq);
    if ('error' in message) {
      const err: NodeJS.ErrnoException = new Error(message.error.message);
      if (message.error.code !== undefined) err.code = message.error.code;
      asked.callback(err, '');
    } else if (asked.all) asked.callback(null, message.addresses);
    else asked.callback(null, message.addresses[0]!.address, message.addresses[0]!.family);
    return;
  }
  for (const attempt of message.attempts) {
    void sendAttempt(agent, attempt, signEd25519, data).then((answer) => {
      if (answers.length === 0) setImmediate(flush);
      answers.push({ seq: attempt.seq, answer });
    });
  }
});
