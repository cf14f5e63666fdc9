/**
 * First visits (docs/events.md "A first visit without the cookie"): a page that carries its own copy of the
 * reference scripts may send its first QR request before its event channel's handshake has set the session
 * cookie, so that request comes without one. Each Register that newly binds a tab leaves one *ticket* for
 * such a request: the session and page origin of that Register, taken by the first cookie-less QR request
 * for the tab within `FIRST_VISIT_TICKET_MS`. Node-local and bounded in count.
 */

/** How long after its Register a ticket can be taken (the page's QR request was on its way meanwhile). */
export const FIRST_VISIT_TICKET_MS = 5_000;
/** Tickets kept at most (beyond, the oldest go first: bounded memory). */
const MAX_TICKETS = 50_000;

export interface FirstVisitTicket {
  session: string;
  /** The origin of the location the Register sent (null: not an http(s) page). */
  origin: string | null;
}

export class FirstVisitTickets {
  private readonly tickets = new Map<string, FirstVisitTicket & { at: number }>();

  constructor(private readonly now: () => number) {}

  /** The Register of `session` bound `tabId` now (it was free). */
  grant(tabId: string, ticket: FirstVisitTicket): void {
    this.tickets.delete(tabId);
    // A Map keeps insertion order: the first key is the oldest ticket.
    if (this.tickets.size >= MAX_TICKETS) this.tickets.delete(this.tickets.keys().next().value!);
    this.tickets.set(tabId, { ...ticket, at: this.now() });
  }

  /**
   * The tab's session for a request from `origin`, once: a second cookie-less request for the same Register
   * gets nothing. A request from another origin is refused without spending the page's ticket.
   */
  take(tabId: string, origin: string): string | undefined {
    const ticket = this.tickets.get(tabId);
    if (ticket === undefined) return undefined;
    if (this.now() - ticket.at > FIRST_VISIT_TICKET_MS) {
      this.tickets.delete(tabId);
      return undefined;
    }
    if (ticket.origin !== origin) return undefined;
    this.tickets.delete(tabId);
    return ticket.session;
  }
}
