/**
 * Prints a `text`-mode QR code (docs/signing.md: lines of Unicode half blocks, the drawn blocks are the
 * dark modules) in a terminal. Drawn as is, a terminal with a dark background would show light modules
 * on dark, which many scanners do not read; so on a colour terminal each line is written black on
 * white with explicit 256-colour codes (ECMA-48 SGR 38;5 / 48;5, colours 16 and 231 are exactly black
 * and white whatever the terminal's theme). `NO_COLOR` (no-color.org) or a non-terminal gets plain text.
 */

const BLACK_ON_WHITE = '\x1b[38;5;16m\x1b[48;5;231m';
const RESET = '\x1b[0m';

/** Whether to colour: a terminal, and NO_COLOR unset or empty (no-color.org). */
export function useColour(stream: { isTTY?: boolean }, env: Readonly<Record<string, string | undefined>>): boolean {
  return stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

/** The QR text as it will be printed; anything but half blocks, spaces and newlines from the wire becomes a space. */
export function formatQr(text: string, colour: boolean): string {
  const lines = text.replace(/[^\u2580\u2584\u2588 \n]/g, ' ').split('\n');
  return lines.map((line) => (colour ? `${BLACK_ON_WHITE}${line}${RESET}` : line)).join('\n');
}
