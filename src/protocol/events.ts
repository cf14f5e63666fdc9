/**
 * Event types the service pushes to tabs (docs/events.md). Names a page subscribes to;
 * imports nothing.
 */
export const EventTypes = {
  /** Browser-only mode: the signed identity result (data: QuickLoginResult). */
  SignatureReceived: 'SignatureReceived',
  /** Backend mode: the backend accepted the result (data: ""). */
  SignatureReceivedBE: 'SignatureReceivedBE',
  /** Additive: the person rejected the request, so the page need not wait for expiry. */
  SignatureRejected: 'SignatureRejected',
  /** Long-poll answer when nothing happened within the hold time. */
  NOP: 'NOP',
  /** After Register: the service instance's id (data: string); pages reload when it differs from the first one. */
  CheckServerInstance: 'CheckServerInstance',
  /**
   * Additive: the client resumed after an event id (`lastEventId`, `X-Last-Event-ID`) and events after it
   * are gone (its stream was lost and made again, or they passed the stream's bounds). data:
   * `{after, epoch}`. The page should refresh what it waits for (e.g. ask for a new QR code).
   */
  EventsLost: 'EventsLost',
} as const;

/** One attachment in a result (reference renderer field names). */
export interface ResultAttachment {
  Id: string;
  ContentType: string;
  FileName: string;
  Signature: string;
  Timestamp: number;
  Url: string;
}

/** `SignatureReceived.data`, field names compatible with the reference renderer (docs/signing.md). */
export interface QuickLoginResult {
  Id: string;
  Key: string;
  Provider: string;
  State: string;
  Created: number;
  Updated: number;
  From: number;
  To: number;
  Properties: Record<string, string>;
  Attachments: ResultAttachment[];
  ClientKeyName: string;
  HasClientPublicKey: boolean;
  ClientPubKey: string;
  HasClientSignature: boolean;
  ClientSignature: string;
  ServerSignature: string;
  Purpose: string;
  AgentApiToken?: string;
  AgentApiExpires?: number;
}

/** `SignatureRejected.data`. */
export interface QuickLoginRejection {
  Id: string;
  Purpose: string;
}
