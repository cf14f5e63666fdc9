/**
 * The million waiting tabs' shared-store bill from one cluster run's costs (docs/capacity-estimate.md): Redis and
 * PostgreSQL cores for N waiting tabs refreshing every REFRESH_S, waiting WAIT_S, half of them logging in.
 * Every cost is this run's: each call alone on crowded cores, so it is the estimate's upper reading; the
 * estimate gives the readings with many nodes' calls meeting beside it.
 */
import type { BudgetCheck } from '../measure/types.js';

export const CAPACITY = { tabs: 1_000_000, refreshS: 2, waitS: 120, loginShare: 0.5, redisCores: 2, postgresCores: 4 } as const;

/** One shared store's CPU per operation, µs, as this run measured it. */
export interface StoreCosts {
  /** Per waiting tab and second (idle window; PostgreSQL's also the binding refresh). */
  idlePerTabSecond: number;
  /** Per refresh of a known request (the QR rounds on the node that holds the tabs). */
  refresh: number;
  /** Per tab's first QR request (its row stored). */
  firstRequest: number;
  register: number;
  login: number;
}

/** Cores of one store, by what they are for. */
function cores(c: StoreCosts): { idle: number; refreshes: number; arrivals: number; logins: number; total: number } {
  const { tabs, refreshS, waitS, loginShare } = CAPACITY;
  const arrivalsPerS = tabs / waitS;
  const idle = (tabs * c.idlePerTabSecond) / 1e6;
  const refreshes = ((tabs / refreshS) * c.refresh) / 1e6;
  const arrivals = (arrivalsPerS * (c.firstRequest + c.register)) / 1e6;
  const logins = (arrivalsPerS * loginShare * c.login) / 1e6;
  return { idle, refreshes, arrivals, logins, total: idle + refreshes + arrivals + logins };
}

const c2 = (v: number): string => v.toFixed(2);

/** The report's lines and the two budgets. */
export function capacityEstimate(redis: StoreCosts, postgres: StoreCosts, unreliable: string | undefined): { lines: string[]; budgets: BudgetCheck[] } {
  const { tabs, refreshS, waitS, loginShare } = CAPACITY;
  const r = cores(redis);
  const p = cores(postgres);
  const row = (name: string, x: ReturnType<typeof cores>, per: StoreCosts) =>
    `  ${name.padEnd(10)} idle ${c2(x.idle)} + refreshes ${c2(x.refreshes)} + arrivals ${c2(x.arrivals)} + logins ${c2(x.logins)} = ${c2(x.total)} cores (µs: idle ${per.idlePerTabSecond.toFixed(3)}/tab/s, refresh ${per.refresh.toFixed(2)}, first request ${per.firstRequest.toFixed(0)}, Register ${per.register.toFixed(0)}, login ${per.login.toFixed(0)})`;
  const scenario = `${tabs.toLocaleString('en-US')} waiting tabs, a refresh every ${refreshS} s, ${waitS} s waits, ${loginShare * 100} % logging in`;
  const reading = "this run's costs, every call alone on crowded cores: the estimate's upper reading (docs/capacity-estimate.md gives the others)";
  return {
    lines: [`5. What ${scenario} would cost the shared stores (${reading})`, row('Redis', r, redis), row('PostgreSQL', p, postgres)],
    budgets: [
      { name: `capacity: ${scenario} need <= ${CAPACITY.redisCores} Redis cores (${reading})`, met: r.total <= CAPACITY.redisCores, ...(unreliable ? { unreliable } : {}), detail: `${c2(r.total)} cores` },
      { name: `capacity: the same need <= ${CAPACITY.postgresCores} PostgreSQL cores (${reading})`, met: p.total <= CAPACITY.postgresCores, ...(unreliable ? { unreliable } : {}), detail: `${c2(p.total)} cores` },
    ],
  };
}
