import type { Broker } from '../../src/broker/broker.js';
import type { TestService } from './service.js';

/** The broker of a node, as its hub has it (to hold a step of it). */
export const brokerOf = (node: TestService): Broker => (node.app.tabwire.hub as unknown as { deps: { broker: Broker } }).deps.broker;

/**
 * Runs `during` once, at the instant between the node's hold of the tab `tabId` (its presence there) and its
 * read of the tab's stream: the window a tab moving to the node must not lose events in. Returns `end`,
 * which puts the broker's `hold` back and says whether `during` ran to its end.
 */
export function inHoldWindow(node: TestService, tabId: string, during: () => Promise<void>): { end: () => boolean } {
  const broker = brokerOf(node);
  const hold = broker.hold.bind(broker);
  let state: 'waiting' | 'running' | 'done' = 'waiting';
  broker.hold = async (to, holder, connectedUntil, now) => {
    const held = await hold(to, holder, connectedUntil, now);
    if (to.tabId === tabId && state === 'waiting') {
      state = 'running';
      await during();
      state = 'done';
    }
    return held;
  };
  return {
    end: () => {
      broker.hold = hold;
      return state === 'done';
    },
  };
}
