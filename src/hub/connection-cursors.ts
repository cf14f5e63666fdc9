import type { TabConnection } from './connection.js';

/**
 * The live connections of one tab on this node, each with its cursor (the last event id written to it;
 * undefined while its Register is being served), oldest first: the subset of a Map the hub uses.
 *
 * Almost every tab has one connection, kept in two fields; a second one (a duplicated browser tab) and later
 * ones go in a Map made then. A Map per tab cost ~180 bytes of every idle tab's memory (docs/benchmarks.md#idle-tabs).
 * `forEach` while connections are deleted behaves as a Map's does: deleting the first leaves
 * a hole (the later ones do not move), and a connection deleted before its turn is not visited.
 */
export class ConnectionCursors {
  /** The first connection the tab got, unless it has gone (then undefined, and `rest` holds the others). */
  private first: TabConnection | undefined;
  private firstCursor: number | undefined;
  /** Connections after the first, oldest first; undefined while there are none (never an empty Map). */
  private rest: Map<TabConnection, number | undefined> | undefined;

  get size(): number {
    return (this.first === undefined ? 0 : 1) + (this.rest?.size ?? 0);
  }

  has(connection: TabConnection): boolean {
    return connection === this.first || (this.rest?.has(connection) ?? false);
  }

  /** Sets the cursor of a connection; one the tab does not have yet becomes its newest. */
  set(connection: TabConnection, cursor: number | undefined): this {
    if (connection === this.first) {
      this.firstCursor = cursor;
    } else if (this.first === undefined && this.rest === undefined) {
      this.first = connection;
      this.firstCursor = cursor;
    } else {
      (this.rest ??= new Map()).set(connection, cursor);
    }
    return this;
  }

  delete(connection: TabConnection): boolean {
    if (connection === this.first) {
      this.first = undefined;
      this.firstCursor = undefined;
      return true;
    }
    if (this.rest === undefined || !this.rest.delete(connection)) return false;
    if (this.rest.size === 0) this.rest = undefined;
    return true;
  }

  clear(): void {
    this.first = undefined;
    this.firstCursor = undefined;
    this.rest = undefined;
  }

  /** The connection that came first of those left. */
  oldest(): TabConnection | undefined {
    return this.first ?? this.rest?.keys().next().value;
  }

  /**
   * Calls `visit` with each connection and its cursor, oldest first, as Map.forEach does (no iterator or entry
   * array per call: this runs for every event a tab gets).
   */
  forEach(visit: (cursor: number | undefined, connection: TabConnection) => void): void {
    if (this.first !== undefined) visit(this.firstCursor, this.first);
    this.rest?.forEach(visit);
  }

  /** Whether `test` holds for one of the connections (oldest first; stops at the first that does). */
  some(test: (connection: TabConnection) => boolean): boolean {
    if (this.first !== undefined && test(this.first)) return true;
    if (this.rest !== undefined) for (const connection of this.rest.keys()) if (test(connection)) return true;
    return false;
  }
}
