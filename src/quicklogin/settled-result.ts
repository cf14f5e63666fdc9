import { resultPublishKey, type Delivery } from '../hub/delivery.js';
import type { TabAddress } from '../protocol/address.js';
import type { TabEvent } from '../protocol/frames.js';
import type { PublishedMarks } from './published-marks.js';

export interface SettledResultDeps {
  delivery: Delivery;
  marks: Pick<PublishedMarks, 'add'>;
}

/**
 * Publishes a settled code's tab event under the code's publish key and marks its settlement row published:
 * at once when the broker takes it, or when the hub's held copy lands later (the broker unreachable), so the
 * result outbox does not offer it again after the stream may have moved on. The one way a result is
 * published, by the node that settled the code and by the result outbox (docs/events.md "Results reach the
 * page once"). The mark is written within a short window, with others (published-marks.ts), and not awaited:
 * a lost or late mark costs one more publish under the same key, which the stream answers without a copy.
 * Resolves whether the event is in the tab's stream now.
 */
export async function publishSettledResult(deps: SettledResultDeps, code: string, to: TabAddress, event: TabEvent): Promise<boolean> {
  const mark = (): void => deps.marks.add(code);
  if (!(await deps.delivery.deliver(to, event, undefined, resultPublishKey(code), mark))) return false;
  mark();
  return true;
}
