/**
 * A node's copy of the nodes' set (node -> alive until), as its last heartbeat read it: on a Redis Cluster the
 * broker's scripts run in their tab's hash slot and cannot read the set, so the calling node tells them which
 * holders are dead (docs/redis.md "Redis Cluster").
 *
 * It errs towards alive, never towards dead: counting a live node dead would cut its tab off from its events
 * (the script prunes it from the tab's holders). So a node is named dead only when its time had passed already
 * when the copy was read (Redis said so then; a live node's time only moves forward, and a node whose time
 * passed is dead on one Redis too), and only while the copy is younger than half of `presenceTtlMs` (this node's
 * own heartbeat is late: it cannot tell). A node the copy does not know (one newer than it) is alive. A dead
 * node is then found up to one heartbeat interval later than on one Redis, and is told its events meanwhile,
 * which costs a PUBLISH nobody hears.
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

  /** The nodes known dead at `now`: dead when the copy was read; none when the copy is too old to tell. */
  dead(now: number): string[] {
    if (now - this.readAt > this.presenceTtlMs / 2) return [];
    const dead: string[] = [];
    for (const [node, until] of this.aliveUntil) if (until <= this.readAt) dead.push(node);
    return dead;
  }
}
