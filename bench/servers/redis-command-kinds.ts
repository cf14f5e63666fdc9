/**
 * How bench/servers/channel-tabwire.ts names the commands a node sends to Redis (GET /__bench/redis-counts), and
 * the counting of those it sends to a Redis Cluster (`redisClusterUrls`). Bench-only; src/ is not changed.
 */
import { Cluster } from 'ioredis';

/** A command as ioredis hands it to `sendCommand`. */
export interface SentCommand {
  name: string;
  args: unknown[];
}

/**
 * A command's kind: a broker script by its name (`twPublish`, `twHold` …), another script and a plain command
 * by the first key's family (`evalsha rate:qr_address`, `hgetall handlers:tab`, `publish bus`); a tab's hash
 * tag (`{session:tab}`) as `{}`, a node's id as `*` (`spublish events:*`). `names` maps a script's sha to its name (filled from `scripts` on first use).
 */
export function commandKind(command: SentCommand, scripts: Record<string, { sha: string }>, names: Map<string, string>, prefix: string): string {
  const family = (key: unknown): string => {
    if (typeof key !== 'string' && !Buffer.isBuffer(key)) return '';
    const text = key.toString();
    if (!text.startsWith(prefix)) return '';
    // A node's id (a UUID, as in its sharded channel `events:<node>`) as `*`, so the nodes' counts add up.
    return text.slice(prefix.length).replace(/\{[^}]*\}/g, '{}').split(':').slice(0, 2).map((part) => (part.length > 16 && /\d/.test(part) ? '*' : part)).join(':');
  };
  if (command.name === 'evalsha' || command.name === 'eval') {
    if (names.size === 0) for (const [name, script] of Object.entries(scripts)) names.set(script.sha, name);
    return names.get(String(command.args[0])) ?? `${command.name} ${family(command.args[2])}`;
  }
  return `${command.name} ${family(command.args[0])}`.trim();
}

/**
 * Counts every command the node's Redis Cluster command client sends (connection name `…:commands`; the
 * presence refresh's own client is left out, as its connection is on one Redis), by kind, into `counts`.
 * Installed on the prototype before the app makes its clients. No ` (pipelined)` mark: the cluster client
 * batches commands bound for one shard by itself (auto-pipelining), whatever the node asked. A command the
 * client sends again (offline queue, redirection) is counted once.
 */
export function countClusterCommands(prefix: string, counts: Map<string, number>): void {
  const seen = new WeakSet<object>();
  const names = new Map<string, string>();
  type Send = (this: Cluster, command: SentCommand, stream?: unknown, node?: unknown) => unknown;
  const proto = Cluster.prototype as unknown as { sendCommand: Send };
  const send = proto.sendCommand;
  proto.sendCommand = function (this: Cluster, command, stream, node) {
    const name = (this.options.redisOptions as { connectionName?: string } | undefined)?.connectionName ?? '';
    if (name.endsWith(':commands') && !seen.has(command)) {
      seen.add(command);
      const scripts = (this as unknown as { scriptsSet?: Record<string, { sha: string }> }).scriptsSet ?? {};
      const kind = commandKind(command, scripts, names, prefix);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
    return send.call(this, command, stream, node);
  };
}
