/**
 * SQLite errors that mean "try again shortly", not "this request is wrong": the database stayed locked
 * by another connection past `busy_timeout` (SQLITE_BUSY, SQLITE_LOCKED and their extended codes).
 * Disk and corruption errors are not among them: they need an operator, and answer 500.
 */
export function sqliteUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code);
}
