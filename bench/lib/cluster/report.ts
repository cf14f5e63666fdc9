/**
 * The report of the cluster benchmark (bench/cluster.ts): tables and budgets from the embedded node's and
 * the cluster's results of one run. See docs/benchmarks.md#cluster.
 */
import { loadavg } from 'node:os';
import { OTHER_CPU_LIMIT, kib, machineLine, mib, openFilesLimit, revision, versionOf } from '../common.js';
import { sumOf } from '../measure/counter-maps.js';
import { routingBudget } from './routing.js';
import { cpuPercent, mergeWindows, sqlStatements, type Window } from './meter.js';
import {
  BINDING_REFRESH_S,
  BUDGET_RATIO,
  LOGIN_RATE,
  LOGIN_WARMUP,
  LOGINS,
  OPEN_CONCURRENCY,
  PER_SECOND,
  PING_MS,
  QR,
  TABS,
  TARGETS,
  type LatencySummary,
  type LoopReading,
  type Side,
} from './settings.js';
import { percentile, table } from '../measure/stats.js';
import { capacityEstimate } from './capacity.js';
import { costsPart } from './report-costs.js';
import { beyondIdle, brokerRefresh, disturbed, fmt, ms, num, pct, qrSummary, type Part, type QrSummaries } from './report-parts.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';

function latencyRow(label: string, l: LatencySummary, w: Window, side: Side, loops: LoopReading[], extra: string): string[] {
  const cpuCols = side.nodeNames.map((n) => `${n} ${pct(cpuPercent(w, n))}`).join(', ');
  // Each node's event loop: delay p99/max and its longest GC pause, ms.
  const loopCols = loops.map((r) => `${r.node.replace(/^cluster node |^embedded /, '')} ${ms(r.p99Ms)}/${ms(r.maxMs)} gc ${ms(r.gcMaxMs)}`).join(', ');
  return [label, fmt(l.count), ms(l.p50), ms(l.p90), ms(l.p99), ms(l.max), cpuCols, loopCols, `${pct(w.otherPercent)}${w.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`, extra];
}

export function build(e: Side, c: Side, infra: { pgVersion: string; redisVersion: string; redisShards: number }, idleBefore: number): Omit<BenchReport, 'title'> {
  const qr: QrSummaries = { embedded: qrSummary(e.qr, 'embedded node'), one: qrSummary(c.qr, '1 cluster node (A)'), two: qrSummary(c.qr, '2 cluster nodes (A+B)') };
  const parts = [latencyPart(e, c), idlePart(e, c, infra.redisShards), qrPart(e, c, qr), costsPart(e, c, infra.redisShards, qr), capacityPart(c, qr)];
  return {
    context: contextLines(infra, idleBefore),
    sections: parts.flatMap((p) => p.sections),
    measurements: parts.flatMap((p) => p.measurements ?? []),
    budgets: parts.flatMap((p) => p.budgets ?? []),
  };
}

/** 1. Signature -> tab and hub.deliver latency, and the routing count. */
function latencyPart(e: Side, c: Side): Part {
  const sections: BenchReport['sections'] = [];
  const budgets: BudgetCheck[] = [];
  const measurements: Measurement[] = [];
  const same = c.sameLoad!;
  const latencyLines = table(
    ['path', 'events', 'p50', 'p90', 'p99', 'max', 'node CPU', 'loop p99/max, GC max', 'other', 'note'],
    [
      latencyRow('signature POST -> SignatureReceived, embedded node', e.login.latency, e.login.window, e, e.login.loops, `POST answered p50 ${ms(e.login.answer.p50)}, p99 ${ms(e.login.answer.p99)}`),
      latencyRow(`signature POST (node B) -> tab on node A, cluster, ${fmt(TABS)} tabs per node`, c.login.latency, c.login.window, c, c.login.loops, `POST answered p50 ${ms(c.login.answer.p50)}, p99 ${ms(c.login.answer.p99)}`),
      latencyRow(`same, ${fmt(same.tabsPerNode)} tabs per node (the embedded node's ${fmt(TABS)} in all)`, same.login.latency, same.login.window, c, same.login.loops, `POST answered p50 ${ms(same.login.answer.p50)}, p99 ${ms(same.login.answer.p99)}`),
      latencyRow('hub.deliver -> frame, embedded node', e.deliver.latency, e.deliver.window, e, e.deliver.loops, e.deliver.attempts > 1 ? `${e.deliver.attempts} attempts` : ''),
      latencyRow('hub.deliver on node B -> tab on node A', c.deliver.latency, c.deliver.window, c, c.deliver.loops, c.deliver.attempts > 1 ? `${c.deliver.attempts} attempts` : ''),
      latencyRow('hub.deliver on node A -> tab on node A', c.deliverLocal!.latency, c.deliverLocal!.window, c, c.deliverLocal!.loops, c.deliverLocal!.attempts > 1 ? `${c.deliverLocal!.attempts} attempts` : ''),
    ],
  );
  sections.push({
    heading: `1. Event latency (ms), ${fmt(TABS)} tabs held per node: logins at ${LOGIN_RATE}/s (${fmt(LOGINS)} after ${LOGIN_WARMUP} uncounted), events at ${PER_SECOND}/s to random tabs of ${fmt(TARGETS)}`,
    lines: [
      ...latencyLines,
      `logins: embedded ${e.login.errors} errors, ${e.login.missing} missing; cluster ${c.login.errors} errors, ${c.login.missing} missing${c.login.firstError ? ` (first: ${c.login.firstError})` : ''}${e.login.firstError ? ` (embedded first: ${e.login.firstError})` : ''}`,
      'signature: from just before the signed POST is sent (bench process) to the frame at the tab (its clients process), both on CLOCK_MONOTONIC.',
      `PostgreSQL during the cluster logins: ${fmt(c.login.window.pg?.walSyncs ?? 0)} WAL syncs, mean ${ms((c.login.window.pg?.walSyncMs ?? 0) / Math.max(1, c.login.window.pg?.walSyncs ?? 0))} ms (pg_stat_wal; backends report it up to seconds late)`,
      ...[c.deliver, c.deliverLocal!].map((d, k) => {
        const r = d.refresh;
        if (!r) return '';
        return `${k === 0 ? 'B -> A' : 'A -> A'}: ${r.runs} presence heartbeats (${r.ms.map((v) => ms(v)).join(' / ')} ms) ran on a node during the run; events sent meanwhile: ${fmt(r.during.count)}, p50 ${ms(r.during.p50)}, p99 ${ms(r.during.p99)}, max ${ms(r.during.max)}; the other ${fmt(r.outside.count)}: p50 ${ms(r.outside.p50)}, p99 ${ms(r.outside.p99)}, max ${ms(r.outside.max)}`;
      }),
    ],
  });
  // The budget compares the same workload on this machine: the embedded node's tabs and logins, served by
  // one node or spread over two. With every node full, the cluster's two nodes, their clients, Redis and
  // PostgreSQL do twice the embedded node's work on the same two cores; that ratio is reported beside it.
  const sigRatio = same.login.latency.p99 / e.login.latency.p99;
  budgets.push({
    name: `cluster p99 signature -> tab event (tab on another node) <= ${BUDGET_RATIO}x the single node's, same tabs and logins`,
    met: sigRatio <= BUDGET_RATIO && same.login.errors === 0 && same.login.missing === 0,
    unreliable: [disturbed(same.login.window), disturbed(e.login.window)].filter(Boolean).join('; ') || undefined,
    detail: `cluster (${fmt(same.tabsPerNode)} tabs per node) p99 ${ms(same.login.latency.p99)} ms (p50 ${ms(same.login.latency.p50)}) vs embedded (${fmt(TABS)} tabs) p99 ${ms(e.login.latency.p99)} ms (p50 ${ms(e.login.latency.p50)}) = ${sigRatio.toFixed(2)}x`,
  });
  const fullRatio = c.login.latency.p99 / e.login.latency.p99;
  const delRatio = c.deliver.latency.p99 / e.deliver.latency.p99;
  sections.at(-1)!.lines.push(
    `with ${fmt(TABS)} tabs on each cluster node (twice the embedded node's on the same cores): signature -> tab p99 ${ms(c.login.latency.p99)} vs ${ms(e.login.latency.p99)} ms = ${fullRatio.toFixed(2)}x; hub.deliver B -> A p99 ${ms(c.deliver.latency.p99)} vs ${ms(e.deliver.latency.p99)} ms = ${delRatio.toFixed(2)}x (no budget)`,
    `same-load logins: ${same.login.errors} errors, ${same.login.missing} missing${same.login.firstError ? ` (first: ${same.login.firstError})` : ''}`,
  );
  if (c.routing) {
    // A count, not a timing: other processes cannot disturb it.
    const routed = routingBudget(c.routing, 'cluster node A', 'cluster node B');
    sections.at(-1)!.lines.push(...routed.lines);
    budgets.push(routed.budget);
  }
  measurements.push(
    { key: 'cluster.signature.sameLoad.p99', label: 'signature -> tab, cluster, same tabs in all', rate: LOGIN_RATE, unit: 'login', count: same.login.latency.count, windowMs: same.login.window.ms, latencyMs: { p50: same.login.latency.p50, p99: same.login.latency.p99, max: same.login.latency.max }, otherCpuPercent: same.login.window.otherPercent },
    { key: 'cluster.signature.p99', label: 'signature -> tab, cluster', rate: LOGIN_RATE, unit: 'login', count: c.login.latency.count, windowMs: c.login.window.ms, latencyMs: { p50: c.login.latency.p50, p99: c.login.latency.p99, max: c.login.latency.max }, otherCpuPercent: c.login.window.otherPercent },
    { key: 'embedded.signature.p99', label: 'signature -> tab, embedded', rate: LOGIN_RATE, unit: 'login', count: e.login.latency.count, windowMs: e.login.window.ms, latencyMs: { p50: e.login.latency.p50, p99: e.login.latency.p99, max: e.login.latency.max }, otherCpuPercent: e.login.window.otherPercent },
  );

  return { sections, budgets, measurements };
}

/** 2. Idle tabs: memory, CPU, Redis and PostgreSQL while they wait, the binding refresh; the budget of holding them. */
function idlePart(e: Side, c: Side, redisShards: number): Part {
  const memRows = [...e.memory.map((m) => ({ ...m, side: 'embedded' })), ...c.memory.map((m) => ({ ...m, side: 'cluster' }))].map((m) => [
    m.node,
    fmt(m.tabs),
    mib(m.rss0),
    mib(m.rss),
    kib((m.rss - m.rss0) / m.tabs),
    kib((m.heap - m.heap0) / m.tabs),
  ]);
  const perThousand = (side: Side, name: string): number => cpuPercent(side.idle, name) / (side.idleTabs / side.nodeNames.length / 1000);
  const idleSeconds = c.idle.ms / 1000;
  const idleSent = sumOf(c.idle.sent);
  const redisIdleCalls = c.idle.redis ? sumOf(c.idle.redis.calls) : 0;
  const redisIdleCpu = c.idle.cpuMicros.get('redis') ?? 0;
  const pgIdleCpu = c.idle.cpuMicros.get('postgres') ?? 0;
  const br = c.bindingRefresh!;
  const section = {
    heading: `2. Idle tabs (WebSocket, Ping every ${PING_MS / 1000} s): ${fmt(c.idleTabs)} on 2 cluster nodes, ${fmt(e.idleTabs)} on the embedded node`,
    lines: [
      ...table(['node', 'tabs', 'RSS at 0', 'RSS with tabs', 'RSS/tab', '(heap+ext/tab)'], memRows),
      `opened: embedded ${fmt((e.open.tabs * 1000) / e.open.ms)} tabs/s; cluster ${fmt((c.open.tabs * 1000) / c.open.ms)} tabs/s over both nodes (handshake, Register, CheckServerInstance back, ${OPEN_CONCURRENCY} in flight per node)`,
      `closed by a server: embedded ${e.closedByServer}, cluster ${c.closedByServer} (whole run)`,
      '',
      `Idle window, ${(c.idle.ms / 1000).toFixed(0)} s (embedded ${(e.idle.ms / 1000).toFixed(0)} s): CPU in % of one core`,
      ...table(
        ['process', 'CPU', 'per 1,000 tabs', 'µs per tab per s'],
        [
          ['embedded node', pct(cpuPercent(e.idle, 'node')), `${perThousand(e, 'node').toFixed(2)}%`, num(((e.idle.cpuMicros.get('node') ?? 0) / e.idleTabs) / (e.idle.ms / 1000))],
          ...c.nodeNames.map((n) => [`cluster ${n}`, pct(cpuPercent(c.idle, n)), `${perThousand(c, n).toFixed(2)}%`, num(((c.idle.cpuMicros.get(n) ?? 0) / (c.idleTabs / 2)) / idleSeconds)]),
          [redisShards > 0 ? `redis (1 + ${redisShards} shards)` : 'redis', pct(cpuPercent(c.idle, 'redis')), `${((cpuPercent(c.idle, 'redis') / c.idleTabs) * 1000).toFixed(3)}%`, num(redisIdleCpu / c.idleTabs / idleSeconds, 3)],
          ['postgres', pct(cpuPercent(c.idle, 'postgres')), `${((cpuPercent(c.idle, 'postgres') / c.idleTabs) * 1000).toFixed(3)}%`, num(pgIdleCpu / c.idleTabs / idleSeconds, 3)],
          ['clients (both)', pct(cpuPercent(c.idle, 'clients')), '', ''],
        ],
      ),
      `Redis, idle: ${num(idleSent / c.idleTabs / idleSeconds, 4)} commands sent per tab per second (${[...c.idle.sent].map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}); ${num(redisIdleCalls / c.idleTabs / idleSeconds, 3)} commands executed by Redis per tab per second (scripts' inner commands included)`,
      `Redis memory: ${num((c.open.window.redis?.memory ?? 0) / c.open.tabs, 0)} B per tab (used_memory growth while the tabs registered), ${fmt(c.open.window.redis?.keys ?? 0)} keys for ${fmt(c.open.tabs)} tabs`,
      ...(brokerRefresh(c.idle.sent) > 0
        ? [`Redis CPU per presence hold of one tab (twHold): ${num(redisIdleCpu / brokerRefresh(c.idle.sent), 1)} µs (all of Redis's CPU in the idle window over the holds in it)`]
        : [`Redis CPU per tab per second, idle: ${num(redisIdleCpu / Math.max(1, c.idleTabs * (c.idle.ms / 1000)), 3)} µs (all of Redis's CPU in the idle window: heartbeats, the rolling re-hold on the nodes' presence connections, leases)`]),
      `Presence heartbeat of a node holding ${fmt(TABS)} tabs (hub.refresh: one twHeartbeat; all tabs re-held only after a lapse): median ${ms(percentile(c.refreshMs ?? [], 50))} ms, max ${ms(percentile(c.refreshMs ?? [], 100))} ms over the ${(c.refreshMs ?? []).length} refreshes the nodes kept a record of (load phases included)`,
      `Redis PING from the benchmark every 5 ms for 20 s right after the idle window (outside it, so its cost is not in the idle rates): ${fmt(c.redisPing?.count ?? 0)} PINGs, p50 ${ms(c.redisPing?.p50 ?? Number.NaN)} ms, p99 ${ms(c.redisPing?.p99 ?? Number.NaN)} ms, max ${ms(c.redisPing?.max ?? Number.NaN)} ms`,
      `PostgreSQL, idle: ${fmt(c.idle.pg ? sqlStatements(c.idle.pg.calls) : 0)} statements, ${fmt(c.idle.pg?.writeXacts ?? 0)} write transactions in the window`,
      `Binding refresh (every ${BINDING_REFRESH_S} s per node), run once on node A (${fmt(br.tabs)} tabs): ${ms(br.ms)} ms; PostgreSQL ${fmt(br.window.pg ? sqlStatements(br.window.pg.calls) : 0)} statements, ${ms((br.window.cpuMicros.get('postgres') ?? 0) / 1000)} ms CPU; Redis ${fmt(sumOf(br.window.sent))} commands sent (${[...br.window.sent].map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}), ${ms((br.window.cpuMicros.get('redis') ?? 0) / 1000)} ms CPU; node A ${ms((br.window.cpuMicros.get('node A') ?? 0) / 1000)} ms CPU. Per tab per second at the default interval: PostgreSQL ${num((br.window.cpuMicros.get('postgres') ?? 0) / br.tabs / BINDING_REFRESH_S, 3)} µs, node ${num((br.window.cpuMicros.get('node A') ?? 0) / br.tabs / BINDING_REFRESH_S, 3)} µs, Redis ${num(1 / BINDING_REFRESH_S, 4)} commands`,
    ],
  };
  const held = c.memory.every((m) => m.tabs === TABS) && c.closedByServer === 0;
  const heldBudget: BudgetCheck = {
    name: `2 cluster nodes hold ${fmt(TABS)} idle tabs each (near the ~20,000 open files a process may have here), none closed`,
    met: held,
    unreliable: disturbed(c.idle),
    detail: `${c.memory.map((m) => `${m.node}: ${fmt(m.tabs)} tabs, ${kib((m.rss - m.rss0) / m.tabs)}/tab`).join('; ')}; embedded node ${kib((e.memory[0]!.rss - e.memory[0]!.rss0) / TABS)}/tab; ${c.closedByServer} closed by a node`,
  };
  return { sections: [section], budgets: [heldBudget] };
}

/** 3. QR issuance on the embedded node, one and two cluster nodes. */
function qrPart(e: Side, c: Side, { embedded: embeddedQr, one, two }: QrSummaries): Part {
  const qrRows = [...e.qr, ...c.qr].map((r, i) => {
    const side = i < e.qr.length ? e : c;
    const w = r.window;
    const per = r.result.count;
    return [
      r.label,
      fmt(r.result.rate),
      ms(r.result.p50),
      ms(r.result.p99),
      side.nodeNames.map((n) => pct(cpuPercent(w, n))).join(' + '),
      pct(cpuPercent(w, 'redis')),
      pct(cpuPercent(w, 'postgres')),
      pct(cpuPercent(w, 'bench')),
      num(beyondIdle(side, w, 'nodes') / per, 0),
      side === c ? num(beyondIdle(side, w, 'redis') / per, 1) : '',
      side === c ? num(beyondIdle(side, w, 'postgres') / per, 1) : '',
      `${pct(w.otherPercent)}${w.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
    ];
  });
  return {
    sections: [
      {
        heading: `3. QR issuance: POST /QuickLogin {serviceId:'', tab, mode:'text', purpose} with the tab's cookie and Origin, ${QR.connections} keep-alive connections, ${QR.warmupMs / 1000} s warm-up + ${QR.durationMs / 1000} s per round, ${QR.rounds} rounds each, alternating`,
        lines: [
          ...table(['load on', 'req/s', 'p50 ms', 'p99 ms', 'node CPU', 'redis', 'postgres', 'load gen', 'node µs/req', 'redis µs/req', 'pg µs/req', 'other'], qrRows),
          `2 cluster nodes / 1 cluster node: ${(two.rate / one.rate).toFixed(2)}x (${fmt(two.rate)} vs ${fmt(one.rate)} req/s, means of ${QR.rounds} rounds); embedded node ${fmt(embeddedQr.rate)} req/s. No budget: both cores are shared with the load generator, Redis and PostgreSQL (other processes: up to ${Math.max(one.other, two.other).toFixed(0)}% of a core).`,
          'All processes share 2 cores: the load generator (this process), both nodes, Redis, PostgreSQL and the idle tabs\' clients. µs/req: CPU in the window minus the idle rate over the same time, per request.',
        ],
      },
    ],
  };
}

/** 5. The capacity estimate's shared-store bill at this run's costs. */
function capacityPart(c: Side, { one }: QrSummaries): Part {
  const idleSeconds = c.idle.ms / 1000;
  const issued = c.login.issued;
  const br = c.bindingRefresh!;
  const lw = c.login.window;
  const reg = c.open.window;
  const perOp = (w: Window, per: number, probe: 'redis' | 'postgres'): number => (per > 0 ? beyondIdle(c, w, probe) / per : Number.NaN);
  const oneNodeQr = mergeWindows(one.mine.map((r) => r.window));
  const oneNodeCount = one.mine.reduce((n, r) => n + r.result.count, 0);
  const costs = (probe: 'redis' | 'postgres', extraIdle: number) => ({
    idlePerTabSecond: (c.idle.cpuMicros.get(probe) ?? 0) / c.idleTabs / idleSeconds + extraIdle,
    refresh: perOp(oneNodeQr, oneNodeCount, probe),
    firstRequest: perOp(issued.window, issued.count, probe),
    register: perOp(reg, c.open.tabs, probe),
    login: perOp(lw, c.login.logins, probe),
  });
  const bindingPg = (br.window.cpuMicros.get('postgres') ?? 0) / br.tabs / BINDING_REFRESH_S;
  const capacity = capacityEstimate(costs('redis', 0), costs('postgres', bindingPg), [c.idle, reg, lw, issued.window].map(disturbed).find((d) => d !== undefined));
  return { sections: [{ heading: capacity.lines[0]!, lines: capacity.lines.slice(1) }], budgets: capacity.budgets };

}

function contextLines(infra: { pgVersion: string; redisVersion: string; redisShards: number }, idleBefore: number): string[] {
  return [
    machineLine(),
    `tabwire: ${revision()}`,
    `PostgreSQL ${infra.pgVersion} (defaults: fsync and synchronous_commit on; pg_stat_statements loaded), Redis ${infra.redisVersion} (no persistence)${infra.redisShards > 0 ? ` and a Redis Cluster of ${infra.redisShards} primaries (no replicas, cluster-require-full-coverage no) holding the event streams, presence and announcements (redisClusterUrls; the rest on the one Redis, whose PINGs the idle section times)` : ''}, all private on loopback; libraries: ioredis ${versionOf('ioredis')}, pg ${versionOf('pg')}, ws ${versionOf('ws')}`,
    `nodes: bench/servers/channel-tabwire.ts (buildApp, log silent, --expose-gc); cluster nodes share publicBaseUrl, PostgreSQL and Redis; the embedded node has its own SQLite file and the memory broker`,
    `tabs: ${fmt(TABS)} per node (open-file limit here ${openFilesLimit()} per process), each its own session (cookie from the 101), Ping every ${PING_MS / 1000} s; one clients process per node`,
    `idle check before the run: other processes used ${idleBefore.toFixed(0)}% of a core; load average at the end ${loadavg().map((v) => v.toFixed(1)).join(' ')}`,
  ];
}
