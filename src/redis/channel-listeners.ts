import type { Logger } from 'pino';

/** Called with each message's payload on its channel. */
export type ChannelListener = (payload: string) => void;

/**
 * The listeners of a connection's subscribed channels, one set per channel: what one Redis's subscriber
 * connection and a Redis Cluster's sharded subscribers both keep, and what they subscribe again after a
 * loss. A listener that throws is logged and affects neither the connection nor the channel's others.
 */
export class ChannelListeners {
  private readonly byChannel = new Map<string, Set<ChannelListener>>();

  constructor(private readonly log: Pick<Logger, 'error'>) {}

  /** Adds `listener`; `first` says the channel had none, so it is to be subscribed. */
  add(channel: string, listener: ChannelListener): { first: boolean } {
    let set = this.byChannel.get(channel);
    const first = !set;
    if (!set) this.byChannel.set(channel, (set = new Set()));
    set.add(listener);
    return { first };
  }

  /** Removes `listener`; true when it was the channel's last, so the channel is to be unsubscribed. */
  remove(channel: string, listener: ChannelListener): boolean {
    const set = this.byChannel.get(channel);
    if (!set?.delete(listener) || set.size > 0) return false;
    this.byChannel.delete(channel);
    return true;
  }

  /** Every channel with a listener. */
  channels(): string[] {
    return [...this.byChannel.keys()];
  }

  /** Hands a message that arrived to its channel's listeners. */
  tell(channel: string, payload: string): void {
    for (const listener of this.byChannel.get(channel) ?? []) {
      try {
        listener(payload);
      } catch (err) {
        this.log.error({ err, channel }, 'pub/sub listener failed');
      }
    }
  }
}
