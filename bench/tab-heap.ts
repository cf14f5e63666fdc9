/**
 * `npx tsx bench/tab-heap.ts [tabs] [--bare]`: what an idle registered WebSocket tab keeps on tabwire's heap, by kind
 * of object (`--bare`: what a connection keeps on the bare `ws` server channel-memory compares with,
 * bench/servers/channel-bare-ws.ts). Runs the channel-memory server (bench/servers/channel-tabwire.ts), takes a heap snapshot of a
 * settled heap with no tab, opens `tabs` tabs (default 5,000) from a client process as channel-memory does,
 * takes another, and prints the difference per tab by V8 node type and constructor name, largest first. Not
 * part of `npm run bench`: it explains the channel-memory figure (docs/benchmarks.md), it does not check it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from './lib/common.js';
import { startWorker } from './lib/processes/channel-worker.js';
import { freePort, startChild } from './lib/processes/child.js';
import { fetchOnce } from './lib/load/load.js';
import { table } from './lib/measure/stats.js';

const bare = process.argv.includes('--bare');
const tabs = Number(process.argv.slice(2).find((a) => a !== '--bare') ?? '5000');
if (!(Number.isInteger(tabs) && tabs > 0 && tabs <= 15_000)) {
  console.error('usage: tsx bench/tab-heap.ts [tabs <= 15000] [--bare]');
  process.exit(2);
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** Node ids of a snapshot, to tell the objects that came with the tabs. */
function idsOf(heap: Snapshot): Set<number> {
  const fields = heap.snapshot.meta.node_fields;
  const idAt = fields.indexOf('id');
  const ids = new Set<number>();
  for (let i = 0; i < heap.nodes.length; i += fields.length) ids.add(heap.nodes[i + idAt]!);
  return ids;
}

/**
 * The new plain objects, arrays and closures (not in `old`), grouped by what names them: an object's
 * property names, a closure's function name and its context's variables; count per tab.
 */
function shapes(heap: Snapshot, old: Set<number>, tabs: number): string[] {
  const nf = heap.snapshot.meta.node_fields;
  const ef = heap.snapshot.meta.edge_fields;
  const [typeAt, nameAt, idAt, edgesAt] = ['type', 'name', 'id', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number, number];
  const [eTypeAt, eNameAt, eToAt] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f)) as [number, number, number];
  const nodeTypes = heap.snapshot.meta.node_types[0];
  const edgeTypes = heap.snapshot.meta.edge_types[0];
  const counts = new Map<string, number>();
  // Index of each node's first edge (by node offset), for looking into a closure's context.
  const edgeStart = new Map<number, number>();
  for (let i = 0, e = 0; i < heap.nodes.length; i += nf.length) {
    edgeStart.set(i, e);
    e += heap.nodes[i + edgesAt]! * ef.length;
  }
  let edge = 0;
  for (let i = 0; i < heap.nodes.length; i += nf.length) {
    const edgeCount = heap.nodes[i + edgesAt]!;
    const type = nodeTypes[heap.nodes[i + typeAt]!]!;
    const name = heap.strings[heap.nodes[i + nameAt]!]!;
    const fresh = !old.has(heap.nodes[i + idAt]!);
    if (fresh && ((type === 'object' && (name === 'Object' || name === 'Array' || name === 'Promise' || name === 'Map')) || type === 'closure')) {
      const props: string[] = [];
      for (let e = edge; e < edge + edgeCount * ef.length; e += ef.length) {
        const kind = edgeTypes[heap.edges[e + eTypeAt]!];
        if (kind === 'property') {
          const label = heap.strings[heap.edges[e + eNameAt]!]!;
          if (label !== '__proto__' && label !== 'map') props.push(label);
        } else if (type === 'closure' && kind === 'internal' && heap.strings[heap.edges[e + eNameAt]!] === 'context') {
          props.push(`@${heap.edges[e + eToAt]!}`);
        }
      }
      const key = type === 'closure' ? `closure ${name || '(anonymous)'} [${contextVariables(heap, props, nameAt, edgesAt, nf.length, ef.length, eTypeAt, eNameAt, eToAt, edgeStart, edgeTypes).join(',')}]` : `${type} ${name} {${props.slice(0, 8).join(',')}}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    edge += edgeCount * ef.length;
  }
  return [...counts].filter(([, n]) => n >= tabs / 2).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${(n / tabs).toFixed(2)}  ${k.slice(0, 150)}`);
}

/** The variable names a closure's context holds (from its `@<node offset>` entry in `props`). */
function contextVariables(heap: Snapshot, props: string[], _nameAt: number, edgesAt: number, _nodeWidth: number, edgeWidth: number, eTypeAt: number, eNameAt: number, _eToAt: number, edgeStart: Map<number, number>, edgeTypes: string[]): string[] {
  const ref = props.find((p) => p.startsWith('@'));
  if (!ref) return [];
  const at = Number(ref.slice(1));
  const first = edgeStart.get(at) ?? 0;
  const vars: string[] = [];
  for (let e = first; e < first + heap.nodes[at + edgesAt]! * edgeWidth; e += edgeWidth) {
    if (edgeTypes[heap.edges[e + eTypeAt]!] === 'context') vars.push(heap.strings[heap.edges[e + eNameAt]!]!);
  }
  return vars.slice(0, 8);
}

/** Self size and count per "type name" (e.g. `object Tab`, `closure onMessage`, `string`). */
function totals(heap: Snapshot): Map<string, { bytes: number; count: number }> {
  const fields = heap.snapshot.meta.node_fields;
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const types = heap.snapshot.meta.node_types[0];
  const out = new Map<string, { bytes: number; count: number }>();
  for (let i = 0; i < heap.nodes.length; i += width) {
    const type = types[heap.nodes[i + typeAt]!]!;
    // Strings, numbers and code are counted by type only: their "name" is their content.
    const key = ['string', 'concatenated string', 'sliced string', 'number', 'code', 'hidden'].includes(type) ? type : `${type} ${heap.strings[heap.nodes[i + nameAt]!]}`;
    const entry = out.get(key) ?? { bytes: 0, count: 0 };
    entry.bytes += heap.nodes[i + sizeAt]!;
    entry.count += 1;
    out.set(key, entry);
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'tabwire-tab-heap-'));
const port = await freePort();
const server = bare
  ? await startChild('bare ws', new URL('./servers/channel-bare-ws.ts', import.meta.url), [String(port), dir], { nodeArgs: ['--expose-gc'] })
  : await startChild('tabwire', new URL('./servers/channel-tabwire.ts', import.meta.url), [JSON.stringify({ port, sqliteFile: join(dir, 'tab-heap.sqlite'), pingTimeoutSeconds: 600 })], {
      nodeArgs: ['--expose-gc'],
    });
const clients = await startWorker('ws clients', new URL('./servers/channel-ws-clients.ts', import.meta.url));
try {
  const connected = async (): Promise<number> => {
    const stats = JSON.parse((await fetchOnce(port, 'GET', '/__bench/stats')).body.toString()) as { hub?: { connected: number }; registered?: number };
    return stats.hub?.connected ?? stats.registered ?? 0;
  };
  const snapshot = async (): Promise<string> => (JSON.parse((await fetchOnce(port, 'POST', '/__bench/heap-snapshot')).body.toString()) as { file: string }).file;
  const url = `ws://127.0.0.1:${port}/ClientEventsWS`;
  // As channel-memory: tabs opened and closed first, so one-off growth is not counted per tab.
  await clients.call('warmup', { url, prefix: 'warm-', count: 200 });
  await waitUntil(async () => (await connected()) === 0, 10_000);
  const first = JSON.parse(readFileSync(await snapshot(), 'utf8')) as Snapshot;
  const before = totals(first);
  const oldIds = idsOf(first);
  const opened = await clients.call<{ opened: number; failed: number }>('open', { url, prefix: 'tab-', from: 0, to: tabs, concurrency: 100 }, 120_000);
  if (opened.failed > 0) throw new Error(`${opened.failed} tabs failed to open`);
  await waitUntil(async () => (await connected()) === tabs, 30_000, 100);
  const second = JSON.parse(readFileSync(await snapshot(), 'utf8')) as Snapshot;
  const after = totals(second);

  const rows = [...after]
    .map(([key, a]) => {
      const b = before.get(key) ?? { bytes: 0, count: 0 };
      return { key, bytes: (a.bytes - b.bytes) / tabs, count: (a.count - b.count) / tabs };
    })
    .filter((r) => Math.abs(r.bytes) >= 8)
    .sort((x, y) => y.bytes - x.bytes);
  const total = rows.reduce((sum, r) => sum + r.bytes, 0);
  console.log(`${bare ? 'bare ws server: ' : ''}heap growth per idle tab at ${tabs.toLocaleString('en-US')} tabs: ${total.toFixed(0)} B (kinds with at least 8 B per tab)\n`);
  console.log(table(['kind (V8 node type and name)', 'B per tab', 'objects per tab'], rows.slice(0, 40).map((r) => [r.key.slice(0, 70), r.bytes.toFixed(0), r.count.toFixed(2)])).join('\n'));
  console.log('\nNew plain objects, arrays, promises, maps and closures, per tab, by their property names (closures: their function):');
  for (const line of shapes(second, oldIds, tabs)) console.log(`  ${line}`);
} finally {
  await clients.stop();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
