/**
 * Text from the wire goes to a terminal: control characters (C0, DEL, C1) become U+FFFD, so a value
 * cannot move the cursor, recolour the screen or hide what follows (ECMA-48 escape sequences start
 * with ESC or CSI).
 */
export const printable = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD');
