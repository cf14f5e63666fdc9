/**
 * A QR request (docs/signing.md "Derived codes"): everything a login code copies from the request that asked
 * for it, stored once per request and key instead of once per code. Each refresh of the page answers a new
 * code derived from it (quicklogin/derived-code.ts); a code becomes a `LoginCode` row when an app first fetches it.
 */
export interface QrRequestRecord {
  /** 36 bits of a MAC of the request under the code key `kid` (quicklogin/qr-requests.ts). */
  id: number;
  /** The code key the id and every code of this row are made with. */
  kid: string;
  tabId: string;
  sessionHash: string | null;
  origin: string | null;
  purpose: string;
  propertyFilter: string | null;
  attachmentFilter: string | null;
  serviceId: string;
  agentApiTimeout: number | null;
  scanSeconds: number | null;
  /** How long each code of the request is valid from its issue time (the issuing node's `codeValiditySeconds`). */
  validityMs: number;
  createdAt: number;
  /** The row outlives every code issued for it: no code is issued that expires after this. */
  expiresAt: number;
}

/** QR requests by id: written once per request (and rarely touched), read when a node first meets a request or a code of it. */
export interface QrRequestStore {
  /**
   * Stores `request` unless a row with its id exists; returns whether it did. Of concurrent callers on any
   * nodes exactly one stores it; the others read what is there (`get`) to tell their own request from a collision.
   */
  insertIfAbsent(request: QrRequestRecord): Promise<boolean>;
  get(id: number): Promise<QrRequestRecord | undefined>;
  /** Moves the row's expiry up to `expiresAt` (never down); returns false when the row is gone. */
  extend(id: number, expiresAt: number): Promise<boolean>;
  /** Removes requests that expired before `before`; returns how many. */
  deleteExpired(before: number): Promise<number>;
}
