/**
 * Churn (the `churn` command): people come and go. Each running tab leaves after a random stay, as
 * `drop` does, and a new person's page takes its slot at once (new WebSocket, session and tab id,
 * Register, a QR request as the page loads).
 */
import { performance } from 'node:perf_hooks';
import { startPings } from '../tab-pings.js';
import { noteError, recordArrived, recordLeft } from './readings.js';
import { refresh } from './refresh.js';
import { assertSetup, state } from './state.js';
import { closeLeftTab, openTab, stopTab, type Tab } from './tabs.js';

// The mean stay (0: no churn), and the numbers new pages' tab ids start from.
let churnMeanMs = 0;
let nextArrival = 90_000_000;

/** Whether people come and go now; `drop` refuses while they do. */
export const churning = (): boolean => churnMeanMs > 0;

/** Sets the mean stay (0 stops the churn) and draws a new stay for every running tab. */
export function setChurn(meanStayMs: number): void {
  churnMeanMs = meanStayMs;
  for (const tab of state.tabs) if (tab.running) scheduleLeave(tab);
}

/** An exponential stay with the churn's mean: people leave at random moments, independently of each other. */
function scheduleLeave(tab: Tab): void {
  clearTimeout(tab.leave);
  tab.leave = churnMeanMs > 0 ? setTimeout(leaveAndReplace, -Math.log(1 - Math.random()) * churnMeanMs, tab) : undefined;
}

/** A person leaves (logged in, or gave up) and another arrives: a new page in the same slot, asking for a code at once. */
function leaveAndReplace(tab: Tab): void {
  const s = assertSetup();
  const tabs = state.tabs;
  if (state.stopping || churnMeanMs === 0 || tabs[tab.slot] !== tab) return;
  stopTab(tab);
  recordLeft();
  void closeLeftTab(tab);
  const started = performance.now();
  openTab(s, nextArrival++).then(
    (fresh) => {
      if (state.stopping) return void fresh.ws.terminate();
      // The churn stopped and `drop` took the slot meanwhile: this page leaves at once.
      if (tabs[tab.slot] !== tab) {
        stopTab(fresh);
        return void closeLeftTab(fresh);
      }
      recordArrived(performance.now() - started);
      fresh.slot = tab.slot;
      tabs[tab.slot] = fresh;
      startPings(fresh, s.pingMs);
      fresh.running = true;
      refresh(fresh);
      scheduleLeave(fresh);
    },
    (err: unknown) => noteError('open', (err as Error).message),
  );
}
