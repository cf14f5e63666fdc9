import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { resultPublishKey, type Delivery } from '../hub/delivery.js';
import type { TabAddress } from '../protocol/address.js';
import type { TabEvent } from '../protocol/frames.js';
import type { CodeStore } from '../store/stores.js';

export interface SettledResultDeps {
  delivery: Delivery;
  codes: Pick<CodeStore, 'markPublished'>;
  clock: Clock;
  log: Pick<Logger, 'warn'>;
}

/**
 * Publishes a settled code's tab event under the code's publish key and marks its settlement row published:
 * at once when the broker takes it, or when the hub's held copy lands later (the broker unreachable), so the
 * result outbox does not offer it again after the stream may have moved on. The one way a result is
 * published, by the node that settled the code and by the result outbox (docs/events.md "Results reach the
 * page once"). A lost mark costs one more publish under the same key, which the stream answers without a
 * copy. Resolves whether the event is in the tab's stream now.
 */
export async function publishSettledResult(deps: SettledResultDeps, code: string, to: TabAddress, event: TabEvent): Promise<boolean> {
  const mark = (): Promise<void> =>
    deps.codes.markPublished(code, deps.clock.now()).catch((err: unknown) => deps.log.warn({ err }, 'marking a result published failed'));
  if (!(await deps.delivery.deliver(to, event, undefined, resultPublishKey(code), () => void mark()))) return false;
  await mark();
  return true;
}
