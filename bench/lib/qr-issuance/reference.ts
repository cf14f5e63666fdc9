/**
 * The encodeQr reference of the QR issuance benchmark (bench/qr-issuance.ts): every HTTP measurement is
 * bracketed by encodeQr rates measured inside the same server process, so a request rate can be read
 * against the machine's speed at that moment.
 */
import type { ChildServer } from '../processes/child.js';
import type { QuietPolicy } from '../measure/quiet.js';
import { DRIFT_LIMIT, REFERENCE } from './settings.js';
import type { Measurement } from '../measure/types.js';

/** An HTTP measurement with the encodeQr reference measured just before and just after it. */
export interface Bracketed {
  http: Measurement;
  before: Measurement;
  after: Measurement;
}

/**
 * The machine's speed drifts (a virtual machine shares its host, and its two cores need not be
 * equally fast), so a request rate is only compared with encodeQr rates measured inside the same
 * server process, while it serves nothing, just before and just after the request run.
 */
export class Reference {
  constructor(
    private readonly urlBase: string,
    private readonly quiet: QuietPolicy,
  ) {}

  /**
   * When other processes disturbed any of the three measurements or the reference moved by more
   * than DRIFT_LIMIT, the whole triple is run again (within the run's retry allowance) and the
   * steadiest attempt is kept. `retry: false` for rows that are context only.
   */
  async around(server: ChildServer, run: () => Promise<Measurement>, retry = true): Promise<Bracketed> {
    const once = async (): Promise<Bracketed> => {
      const before = await server.reference(this.urlBase, REFERENCE);
      const http = await run();
      const after = await server.reference(this.urlBase, REFERENCE);
      return { http, before, after };
    };
    if (!retry) return once();
    const over = (m: Measurement): number => Math.max(0, (m.otherCpuPercent ?? 0) - this.quiet.limitPercent) / 100;
    const badness = (b: Bracketed): number => Math.max(0, drift(b) - DRIFT_LIMIT) + over(b.before) + over(b.http) + over(b.after);
    const { value, attempts } = await this.quiet.best(once, badness);
    if (attempts === 1) return value;
    const note = `measured ${attempts}x (with its references) because the machine was busy or its speed moved; kept the steadiest`;
    return { ...value, http: { ...value.http, note: value.http.note ? `${value.http.note}; ${note}` : note } };
  }
}

/** The encodeQr rate around a measurement: the mean of the one before and the one after. */
export const mean = (b: Bracketed): number => (b.before.rate + b.after.rate) / 2;
/** How far the encodeQr rate moved across a measurement, as a share of the faster of the two. */
export const drift = (b: Bracketed): number => Math.abs(b.before.rate - b.after.rate) / Math.max(b.before.rate, b.after.rate);
