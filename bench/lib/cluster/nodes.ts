/**
 * The nodes of the cluster benchmark (bench/cluster.ts): each a tabwire child process
 * (bench/servers/channel-tabwire.ts) with a clients process of its own holding its tabs
 * (bench/servers/cluster-clients.ts), and what the benchmark asks a node through its bench-only routes.
 */
import { startChild, type ChildServer } from '../processes/child.js';
import { openFilesLimit, requireOpenFiles } from '../common.js';
import { startWorker, type Worker } from '../processes/channel-worker.js';
import { FD_MARGIN, PING_MS, TABS, type LoopReading } from './settings.js';
import { fetchOnce } from '../load/load.js';

/** One node and the process holding its tabs. */
export interface NodeRig {
  name: string;
  server: ChildServer;
  clients: Worker;
  prefix: string;
}

/** The tabs a node counts as connected now (its /__bench/stats). */
export async function connected(port: number): Promise<number> {
  return (JSON.parse((await fetchOnce(port, 'GET', '/__bench/stats')).body.toString()) as { hub: { connected: number } }).hub.connected;
}

/**
 * Starts a node and its clients process, both checked for room for TABS open files, the clients pointed at
 * the node; `nodeArgs` are Node.js flags beside --expose-gc (the service's own, for CPU comparisons).
 */
export async function startNode(name: string, args: Record<string, unknown>, origin: string, prefix: string, nodeArgs: readonly string[] = []): Promise<NodeRig> {
  const server = await startChild(name, new URL('../../servers/channel-tabwire.ts', import.meta.url), [JSON.stringify(args)], { nodeArgs: ['--expose-gc', ...nodeArgs], readyTimeoutMs: 60_000 });
  requireOpenFiles(`${name} (pid ${server.pid})`, openFilesLimit(server.pid), TABS + FD_MARGIN);
  const clients = await startWorker(`${name} clients`, new URL('../../servers/cluster-clients.ts', import.meta.url));
  requireOpenFiles(`${name} clients (pid ${clients.pid})`, clients.openFilesLimit, TABS + FD_MARGIN);
  await clients.call('setup', { port: server.port, origin, prefix, pingMs: PING_MS });
  return { name, server, clients, prefix };
}

/** Stops the clients processes, then the nodes, one at a time. */
export async function stopNodes(nodes: NodeRig[]): Promise<void> {
  for (const n of nodes) await n.clients.stop();
  for (const n of nodes) await n.server.stop();
}

/** The presence refreshes the nodes ran: [start, end] on CLOCK_MONOTONIC (ns). */
export async function refreshesOf(nodes: NodeRig[]): Promise<[bigint, bigint][]> {
  const all: [bigint, bigint][] = [];
  for (const n of nodes) {
    const list = JSON.parse((await fetchOnce(n.server.port, 'GET', '/__bench/refreshes')).body.toString()) as [string, string][];
    for (const [a, b] of list) all.push([BigInt(a), BigInt(b)]);
  }
  return all;
}

/** Resets the nodes' loop monitors; the function returned reads what they saw since. */
export async function watchLoops(nodes: NodeRig[]): Promise<() => Promise<LoopReading[]>> {
  const read = async () =>
    Promise.all(nodes.map(async (n) => ({ node: n.name, ...(JSON.parse((await fetchOnce(n.server.port, 'GET', '/__bench/loop')).body.toString()) as Omit<LoopReading, 'node'>) })));
  await read();
  return read;
}
