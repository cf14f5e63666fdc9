/**
 * Section 4 of the cluster benchmark's report: Redis commands and PostgreSQL statements per operation, and
 * where PostgreSQL's CPU of an operation went by kind of process.
 */
import { sumOf } from '../measure/counter-maps.js';
import { table } from '../measure/stats.js';
import { mergeWindows, type Window } from './meter.js';
import { redisTable, sentTable, sqlTable } from './op-tables.js';
import { redisSpreadLines } from './redis-spread.js';
import { beyondIdle, brokerRefresh, num, type Part, type QrSummaries } from './report-parts.js';
import { PRESENCE_REFRESH_S, type Side } from './settings.js';

/** 4. Redis commands and PostgreSQL statements per operation. */
export function costsPart(e: Side, c: Side, redisShards: number, { one, two }: QrSummaries): Part {
  const idleSeconds = c.idle.ms / 1000;
  const redisIdleCalls = c.idle.redis ? sumOf(c.idle.redis.calls) : 0;
  const issued = c.login.issued;
  const lw = c.login.window;
  const reg = c.open.window;
  const qrWindows = [...one.mine, ...two.mine];
  const qrSent = new Map<string, number>();
  const qrCalls = new Map<string, number>();
  let qrCount = 0;
  for (const r of qrWindows) {
    qrCount += r.result.count;
    for (const [k, v] of r.window.sent) qrSent.set(k, (qrSent.get(k) ?? 0) + v);
    for (const [k, v] of r.window.pg?.calls ?? []) qrCalls.set(k, (qrCalls.get(k) ?? 0) + v);
  }
  // Periodic work (presence refresh, the purge's lease) is reported per idle tab, not per request.
  const withoutRefresh = (m: Map<string, number>): Map<string, number> => new Map([...m].filter(([k]) => k !== 'twHold (pipelined)' && !k.includes('lease:')));
  const idleHoldsPerTabSecond = brokerRefresh(c.idle.sent) / c.idleTabs / idleSeconds;
  // Commands Redis executes per presence refresh of one tab (the script and those inside it): idle Redis does nothing else.
  const callsPerHold = brokerRefresh(c.idle.sent) > 0 ? redisIdleCalls / brokerRefresh(c.idle.sent) : 0;
  return {
    sections: [
      {
        heading: `4. Redis commands and PostgreSQL statements per operation (cluster; presence refreshes left out of the per-request columns)${redisShards > 0 ? `; Redis: the one Redis and the ${redisShards} shards of the streams' Redis Cluster, summed` : ''}`,
        lines: [
          ...sentTable([
            { label: 'per Register', per: c.open.tabs, sent: withoutRefresh(reg.sent) },
            { label: 'per QR req (codes for logins)', per: issued.count, sent: withoutRefresh(issued.window.sent) },
            { label: 'per QR req (throughput)', per: qrCount, sent: withoutRefresh(qrSent) },
            { label: 'per login', per: c.login.logins, sent: withoutRefresh(lw.sent) },
            { label: 'per idle tab per s', per: c.idleTabs * idleSeconds, sent: c.idle.sent },
          ]),
          '',
          ...redisTable([
            { label: 'per Register', per: c.open.tabs, calls: reg.redis?.calls ?? new Map() },
            { label: 'per login', per: c.login.logins, calls: lw.redis?.calls ?? new Map() },
          ]),
          '',
          ...sqlTable([
            { label: 'per Register', per: c.open.tabs, calls: reg.pg?.calls ?? new Map() },
            { label: 'per QR req (codes for logins)', per: issued.count, calls: issued.window.pg?.calls ?? new Map() },
            { label: 'per QR req (throughput)', per: qrCount, calls: qrCalls },
            { label: 'per login', per: c.login.logins, calls: lw.pg?.calls ?? new Map() },
          ]),
          '',
          ...table(
            ['per operation', 'embedded node CPU µs', 'cluster node CPU µs', 'Redis cmds executed', 'Redis CPU µs', 'PG write xacts', 'WAL bytes', 'PG CPU µs'],
            [
              ['Register (ramp, both nodes)', e.open.window, e.open.tabs, reg, c.open.tabs] as const,
              ['QR request (the throughput rounds)', mergeWindows(e.qr.map((r) => r.window)), e.qr.reduce((n, r) => n + r.result.count, 0), mergeWindows(c.qr.map((r) => r.window)), qrCount] as const,
              ['login: GET signUrl + signed POST + event', e.login.window, e.login.logins, lw, c.login.logins] as const,
            ].map(([label, ew, eper, w, per]) => [
              label,
              num(beyondIdle(e, ew, 'nodes') / eper, 0),
              num(beyondIdle(c, w, 'nodes') / per, 0),
              num((w.redis ? Math.max(0, sumOf(w.redis.calls) - brokerRefresh(w.sent) * callsPerHold) : 0) / per, 1),
              num(beyondIdle(c, w, 'redis') / per, 1),
              num((w.pg?.writeXacts ?? 0) / per),
              num((w.pg?.walBytes ?? 0) / per, 0),
              num(beyondIdle(c, w, 'postgres') / per, 1),
            ]),
          ),
          `Redis cmds executed: INFO commandstats, every command including those inside scripts, minus ${num(callsPerHold, 1)} per presence refresh (twHold) in the window (the idle window's ratio). Presence refresh: ${num(idleHoldsPerTabSecond, 4)} twHold per tab per second (1 per ${PRESENCE_REFRESH_S} s).`,
          'CPU µs: the window\'s CPU minus the idle rate over the same time, per operation (small windows on a shared machine: indicative).',
          ...pgByProcessLines(c, [
            { label: 'per Register', w: reg, per: c.open.tabs },
            { label: 'per login', w: lw, per: c.login.logins },
          ]),
          ...(redisShards > 0 ? ['', ...redisSpreadLines(c)] : []),
        ],
      },
    ],
  };

}

/**
 * Where PostgreSQL's CPU of an operation went, by kind of process, beyond the idle window's rate of each.
 * A process that exited in the window (an autovacuum worker, a closed connection's backend) counts whole
 * under the postmaster's exited children, and a backend that exited leaves its earlier CPU there too: the
 * split is indicative, the total exact.
 */
function pgByProcessLines(c: Side, ops: { label: string; w: Window; per: number }[]): string[] {
  const idle = c.idle.pg?.cpuByKind ?? new Map<string, number>();
  const kinds = [...new Set(ops.flatMap(({ w }) => [...(w.pg?.cpuByKind.keys() ?? [])]))].sort();
  if (kinds.length === 0) return [];
  const rows = ops.map(({ label, w, per }) => [
    label,
    ...kinds.map((k) => num(((w.pg?.cpuByKind.get(k) ?? 0) - ((idle.get(k) ?? 0) / c.idle.ms) * w.ms) / per, 1)),
  ]);
  return ['', 'PostgreSQL CPU µs by process, beyond the idle rate of each (indicative split, exact total):', ...table(['operation', ...kinds], rows)];
}
