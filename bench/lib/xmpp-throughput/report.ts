/**
 * The report of the XMPP throughput benchmark (bench/xmpp-throughput.ts): every round in a table, each
 * tabwire round against the bare rounds around it, and the budget on the median of those shares.
 */
import { execFileSync } from 'node:child_process';
import { OTHER_CPU_LIMIT, machineLine, revision, versionOf } from '../common.js';
import { formatRate, formatRatio, table } from '../measure/stats.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';
import { BUDGET_SHARE, N, N_TABS, TABWIRE_ROUNDS, USERS, WARMUP, WINDOW, type Round } from './settings.js';

/** Everything a run hands to its report. */
export interface XmppThroughputRun {
  title: string;
  /** The rounds in the order they ran: bare, then tabwire and bare in turn. */
  rounds: Round[];
  /** The address the messages went to. */
  to: string;
  /** What the last tabwire round saw: handlers registered, frames on its busiest tab. */
  handlersRegistered: number;
  framesOnBusiestTab: number;
  /** The idle check before the run, and how long it waited for other runs. */
  idle: number;
  waitedMs: number;
}

/** The benchmark's report: context, the rounds table with each tabwire round's share, the budget. */
export function xmppThroughputReport(run: XmppThroughputRun): BenchReport {
  const { title, rounds, to, handlersRegistered, framesOnBusiestTab, idle, waitedMs } = run;
  // Each tabwire round against the mean of the bare rounds just before and after it (the machine's
  // speed drifts over a run); the share is the median of those.
  const pairs = rounds.flatMap((r, i) => {
    if (r.kind !== 'tabwire') return [];
    const bareRate = (rounds[i - 1]!.rate + rounds[i + 1]!.rate) / 2;
    return [{ tab: r, bareRate, share: r.rate / bareRate, drift: Math.abs(rounds[i - 1]!.rate - rounds[i + 1]!.rate) / bareRate }];
  });
  const middle = [...pairs].sort((a, b) => a.share - b.share)[pairs.length >> 1]!;
  const { tab, bareRate, share, drift } = middle;
  const disturbed = rounds.filter((r) => r.other > OTHER_CPU_LIMIT);
  const unreliable = [
    ...(disturbed.length > 0 ? [`other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s)`] : []),
    ...(drift > 0.15 ? [`the bare rounds around the median tabwire round differ by ${formatRatio(drift)}`] : []),
  ];
  const rows = rounds.map((r, i) => [
    `${r.kind === 'bare' ? 'bare @xmpp/component, counts only' : `tabwire -> ${N_TABS} WS tabs`} (round ${i + 1})`,
    formatRate(r.rate),
    `${(r.ms / 1000).toFixed(2)} s`,
    `${r.prosodyCpu.toFixed(0)}%`,
    `${r.receiverCpu.toFixed(0)}%`,
    `${r.benchCpu.toFixed(0)}%`,
    `${r.other.toFixed(0)}%${r.other > OTHER_CPU_LIMIT ? ' !' : ''}`,
  ]);
  const budgets: BudgetCheck[] = [
    {
      name: `tabwire XMPP messages/s >= ${BUDGET_SHARE * 100}% of the bare-component rate`,
      met: share >= BUDGET_SHARE,
      unreliable: unreliable.length > 0 ? unreliable.join('; ') : undefined,
      detail: `${formatRate(tab.rate)} msg/s = ${formatRatio(share)} of ${formatRate(bareRate)} msg/s (the median of ${TABWIRE_ROUNDS} tabwire rounds, each against the mean of the bare rounds around it; ${N.toLocaleString('en-US')} messages per round; all: ${pairs.map((p) => formatRatio(p.share)).join(', ')})`,
    },
  ];
  const measurements: Measurement[] = rounds.map((r, i) => ({
    key: `xmpp.${r.kind}.${i}`,
    label: r.kind === 'bare' ? 'bare component' : 'tabwire to tabs',
    rate: r.rate,
    unit: 'msg',
    count: r.count,
    windowMs: r.ms,
    cpuPercent: r.receiverCpu,
    cpuMicrosPerOp: (r.receiverCpu / 100) * r.ms * 1000 / r.count,
    clientCpuPercent: r.benchCpu,
    otherCpuPercent: r.other,
  }));
  let prosodyVersion = '?';
  try {
    prosodyVersion = execFileSync('dpkg-query', ['-W', '-f=${Version}', 'prosody'], { encoding: 'utf8' }).trim();
  } catch {
    /* not Debian */
  }
  return {
    title,
    context: [
      machineLine(),
      `tabwire: ${revision()}`,
      `libraries: prosody ${prosodyVersion}, @xmpp/component ${versionOf('@xmpp/component')}, @xmpp/client ${versionOf('@xmpp/client')}, ws ${versionOf('ws')}`,
      `Prosody: private, loopback, c2s PLAIN without TLS; ${USERS} users logged in from this process (@xmpp/client), <message type="chat"> with a short <body> to ${to}, round-robin`,
      `each round: ${WARMUP.toLocaleString('en-US')} uncounted, then ${N.toLocaleString('en-US')} counted, at most ${WINDOW} sent and not yet counted; rate = count / (last counted - first sent)`,
      `bare: @xmpp/component in a child process, writes 1 byte per message to a TCP socket this process counts`,
      `tabwire: buildApp in a child process (SQLite in a temp dir, silent log), agent account "agent", ${N_TABS} WebSocket tabs ('ls', own cookie each), ${handlersRegistered} handlers {type: chat, function: OnChat} (one per tab); frames counted at the tabs; the busiest tab got ${framesOnBusiestTab.toLocaleString('en-US')} of the ${(WARMUP + N).toLocaleString('en-US')} (warm-up included)`,
      `idle check before the run: other processes used ${idle.toFixed(0)}% of a core${waitedMs > 0 ? `; waited ${(waitedMs / 1000).toFixed(0)} s for other runs` : ''}`,
      ...(disturbed.length > 0 ? [`WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s) (marked !)`] : []),
    ],
    sections: [
      {
        heading: 'Rounds in order (bare, then tabwire and bare in turn); CPU in % of one core over the counted window',
        lines: [
          ...table(['path', 'msg/s', 'time', 'Prosody CPU', 'receiver CPU', 'clients CPU', 'other'], rows),
          ...pairs.map((p) => `tabwire ${formatRate(p.tab.rate)} msg/s against ${formatRate(p.bareRate)} (mean of the bare rounds around it, which differ by ${formatRatio(p.drift)}) -> ${formatRatio(p.share)}`),
          `median: ${formatRatio(share)}`,
        ],
      },
    ],
    measurements,
    budgets,
  };
}
