import type { Logger } from 'pino';
import type { DeliveryFallback } from '../broker/broker.js';
import type { MessageStore } from '../store/stores.js';

/**
 * Stores a routed message its tab could not take (the hub's fallback): nothing is lost because a
 * browser crashed, a network dropped or a buffer overflowed. Past the account's quota it is
 * dropped and logged, as a new message would be refused (docs/xmpp.md "Delivered means confirmed"). Apart from the router so the
 * hub, which the router delivers through, can be given it when it is made.
 */
export class UndeliveredMessages {
  /** `quota`: messages an account may hold before new ones are refused (the router's quota). */
  constructor(
    private readonly deps: { messages: MessageStore; log: Logger },
    private readonly quota: number,
  ) {}

  async store(fallback: DeliveryFallback): Promise<void> {
    const { kind: _kind, ...message } = fallback;
    if (!(await this.deps.messages.append(message, this.quota))) {
      this.deps.log.warn({ accountId: message.accountId }, 'undelivered message dropped: the account\'s message store is full');
    }
  }
}
