/** Where a callback delivery stands: `pending` until delivered or given up. */
export type CallbackState = 'pending' | 'delivered' | 'gone' | 'expired';

/** One durable callback delivery (the outbox row). `id` is the stable `webhook-id`. */
export interface Callback {
  id: string;
  serviceId: string;
  /** Tab to tell `SignatureReceivedBE` on success; empty when none. */
  tabId: string;
  /** Session the tab belonged to when the code was issued: only it hears `SignatureReceivedBE`. */
  tabSession: string | null;
  url: string;
  body: string;
  webhookSecret: string | null;
  state: CallbackState;
  attempts: number;
  nextAttemptAt: number;
  deadline: number;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}

/** A callback to store with its code's settlement; `leaseUntil` when the storing node attempts it itself. */
export interface CallbackToStore {
  callback: Callback;
  leaseUntil?: number;
}

/** The backend-mode callback outbox (docs/backend.md): durable rows that nodes claim, deliver and retry. */
export interface CallbackStore {
  /**
   * Inserts unless a callback with that id exists; returns whether it did. With `leaseUntil` the
   * inserting node holds the claim at once and attempts it itself without a claim round-trip.
   */
  insert(callback: Callback, leaseUntil?: number): Promise<boolean>;
  get(id: string): Promise<Callback | undefined>;
  remove(id: string): Promise<void>;
  /**
   * Claims up to `limit` pending callbacks due at `now` for `leaseMs`: a claimed callback is not
   * returned again (to this or another node) until its lease ends or it is rescheduled.
   */
  claimDue(now: number, leaseMs: number, limit: number): Promise<Callback[]>;
  /**
   * Extends the lease a node holds from `heldUntil` to `until`, unless the callback is no longer pending
   * or its lease is no longer that one (it lapsed and another claim took it); returns whether it did.
   */
  renewLease(id: string, heldUntil: number, until: number): Promise<boolean>;
  /** Pending -> delivered, once; returns whether this call made the move. */
  markDelivered(id: string, now: number): Promise<boolean>;
  /** Records a failed attempt and when to try next, releasing the lease. */
  reschedule(id: string, attempts: number, nextAttemptAt: number, error: string): Promise<void>;
  /** Ends a callback without delivery (`gone`: the backend said 410; `expired`: past its deadline). */
  finish(id: string, state: 'gone' | 'expired', attempts: number, error: string): Promise<void>;
  /**
   * Removes callbacks whose retry window (`deadline`) ended before `before`, in any state: delivered,
   * given up, or left pending by a node that stopped. Returns how many.
   */
  deleteEnded(before: number): Promise<number>;
}
