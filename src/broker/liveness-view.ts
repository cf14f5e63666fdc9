/**
 * A node's copy of the nodes' set (node -> alive until), as its last heartbeat read it: on a Redis Cluster the
 * broker's scripts run in their tab's hash slot and cannot read the set, so the calling node tells them which
 * holders are dead (docs/redis.md "Redis Cluster").
 *
 * It errs towards alive, never towards dead: counting a live node dead would cut its tab off from its events
 * (the script prunes it from the tab's holders). A live node's heartbeat comes every third of `presenceTtlMs` and
 * sets its time a whole `presenceTtlMs` ahead, so within half of `presenceTtlMs` after this copy was read every
 * live node's time in it is still ahead. An older copy (this node's own heartbeat is late) names nobody dead;
 * a node the copy does not know (one newer than it) is alive. A dead node is then told its events a little
 * longer, which costs a PUBLISH nobody hears.
 */
export class LivenessView {
  private aliveUntil = new Map<string, number>();
  private readAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly presenceTtlMs: number) {}

  /** Takes the set as the heartbeat script answers it: node, alive-until, node, alive-until … */
  update(flat: readonly (string | number)[], now: number): void {
    const next = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) next.set(String(flat[i]), Number(flat[i + 1]));
    this.aliveUntil = next;
    this.readAt = now;
  }

  /** The nodes known dead at `now`; none when the copy is too old to tell. */
  dead(now: number): string[] {
    if (now - this.readAt > this.presenceTtlMs / 2) return [];
    const dead: string[] = [];
    for (const [node, until] of this.aliveUntil) if (until <= now) dead.push(node);
    return dead;
  }
}
