import type { DeliveryFallback, Announcement } from './broker.js';
import type { TabAddress } from '../protocol/address.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';

/**
 * How the Redis broker's stream entries and announcements are written and read (redis-broker-scripts.ts gives
 * the keys): this file alone reads and writes them on the node's side.
 */

interface Parsed {
  id: number;
  at: number;
  frame: EventFrame;
  fallback: DeliveryFallback | undefined;
}

/**
 * `offset:at:flag[publishKey]:json` with the stream's epoch -> the entry; the flag (one digit, the publish key
 * follows it) says whether its fallback still counts (a confirmed one does not).
 */
export function parseEntry(raw: string, epoch: number): Parsed {
  const a = raw.indexOf(':');
  const b = raw.indexOf(':', a + 1);
  const c = raw.indexOf(':', b + 1);
  const body = JSON.parse(raw.slice(c + 1)) as { type: string; data: unknown; fallback?: DeliveryFallback };
  const id = epoch + Number(raw.slice(0, a));
  const fallback = raw.charAt(b + 1) === '1' ? body.fallback : undefined;
  return { id, at: Number(raw.slice(a + 1, b)), frame: { type: body.type, data: body.data, id }, fallback };
}

/** What an announcement carries besides the id, as the publisher writes it (the id only the script knows). */
interface AnnouncementBody {
  to: TabAddress;
  awaiting?: true;
  type: string;
  data: unknown;
}

/**
 * An announcement on a node's events channel is `<id>:<json>`: the script puts the id it gave (decimal digits) before
 * the JSON the publisher wrote, so neither side edits the other's text and this file alone reads and writes it.
 */
export const announcementBody = (to: TabAddress, event: TabEvent, awaiting: boolean): string =>
  JSON.stringify({ to, ...(awaiting ? { awaiting: true } : {}), type: event.type, data: event.data } satisfies AnnouncementBody);

export function parseAnnouncement(payload: string): Announcement {
  const colon = payload.indexOf(':');
  const id = Number(payload.slice(0, colon));
  if (colon < 1 || !Number.isSafeInteger(id)) throw new Error('no event id');
  const body = JSON.parse(payload.slice(colon + 1)) as AnnouncementBody;
  return { to: body.to, frame: { type: body.type, data: body.data, id }, awaiting: body.awaiting === true };
}

export const fallbacksOf = (raws: readonly (string | number)[]): DeliveryFallback[] =>
  raws.map((raw) => parseEntry(String(raw), 0).fallback).filter((f): f is DeliveryFallback => f !== undefined);
