import type { KeyObject } from 'node:crypto';
import type { Agent } from 'undici';
import { callbackAgent, sendAttempt, type AttemptAnswer, type AttemptRequest, type CallbackTransport, type ConnectLookup, type ConnectionOptions } from './attempt.js';
import { BatchSigner } from './batch-signer.js';

/**
 * Attempts sent from the event loop: Ed25519 on the batch signer's thread, the POST through an agent of
 * the event loop (config `callbackDeliveryThread: false`, and what the delivery thread falls back to).
 * Nothing is started before the first attempt.
 */
export class LocalTransport implements CallbackTransport {
  private agent: Agent | undefined;
  private signer: BatchSigner | undefined;

  constructor(
    private readonly key: KeyObject,
    private readonly lookup: ConnectLookup,
    private readonly o: ConnectionOptions,
  ) {}

  send(request: AttemptRequest): Promise<AttemptAnswer> {
    this.agent ??= callbackAgent(this.lookup, this.o);
    const signer = (this.signer ??= new BatchSigner(this.key));
    return sendAttempt(this.agent, request, (content) => signer.sign(content), this.o);
  }

  async close(): Promise<void> {
    await this.agent?.close();
    await this.signer?.close();
  }
}
