/** An sRGB colour, 8 bits per channel. */
export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** The two colours of a QR image: `dark` paints the modules, `light` the background and quiet zone. */
export interface QrPalette {
  dark: Rgb;
  light: Rgb;
}

const BLACK: Rgb = { r: 0, g: 0, b: 0 };
const WHITE: Rgb = { r: 255, g: 255, b: 255 };

/** Black on white: what a value that is not a colour (`Theme`, anything unknown) stands for. */
export const DEFAULT_PALETTE: QrPalette = Object.freeze({ dark: BLACK, light: WHITE });

/**
 * The named colours `fg`/`bg` accept: the 16 basic colour keywords of CSS (CSS Color 4 §6.1), plus
 * `grey` and `orange`. A small closed set, so the names a page may send are documented and bounded.
 */
const NAMED: Readonly<Record<string, string>> = Object.freeze({
  black: '000000',
  silver: 'c0c0c0',
  gray: '808080',
  grey: '808080',
  white: 'ffffff',
  maroon: '800000',
  red: 'ff0000',
  purple: '800080',
  fuchsia: 'ff00ff',
  green: '008000',
  lime: '00ff00',
  olive: '808000',
  yellow: 'ffff00',
  navy: '000080',
  blue: '0000ff',
  teal: '008080',
  aqua: '00ffff',
  orange: 'ffa500',
});

const HEX = /^(?:#|%23)?([0-9a-f]{6})$/i;

/**
 * A colour from an `fg`/`bg` value: `#rrggbb`, `rrggbb`, `%23rrggbb` (a `#` encoded once more than the
 * URL needed) or a name of the set above, case-insensitive. Anything else (`Theme` included) is no
 * colour: undefined, never an error, as pages send values meant for their own themes.
 */
export function parseColour(value: string | undefined): Rgb | undefined {
  if (value === undefined || value.length > 16) return undefined;
  const hex = HEX.exec(value)?.[1] ?? (Object.hasOwn(NAMED, value.toLowerCase()) ? NAMED[value.toLowerCase()] : undefined);
  if (hex === undefined) return undefined;
  const n = Number.parseInt(hex, 16);
  return { r: n >> 16, g: (n >> 8) & 0xff, b: n & 0xff };
}

/** Relative luminance of an sRGB colour (WCAG 2.2, "relative luminance"), 0 (black) to 1 (white). */
export function luminance({ r, g, b }: Rgb): number {
  const linear = (c: number) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}

/**
 * Smallest contrast ratio (L_light + 0.05) / (L_dark + 0.05) a colour pair must reach: 4.5:1, WCAG 2.2's
 * level AA for text (SC 1.4.3). Scanners binarise the image block by block (the ZXing "hybrid" method):
 * grey on white measured unreadable for jsQR from about 3.2:1 down, so WCAG's 3:1 for graphics leaves
 * no margin for a camera. Black on white is 21:1, navy on white 16:1; red or grey on white (4:1) and
 * black on navy (1.3:1) fall back.
 */
export const MIN_CONTRAST = 4.5;

const contrast = (dark: Rgb, light: Rgb): number => (luminance(light) + 0.05) / (luminance(dark) + 0.05);

/**
 * The palette for `fg` (modules) and `bg` (background): a value that is no colour takes its default
 * (black, white). A pair a scanner may fail on falls back to black on white as a whole: the modules
 * must be darker than the background (many scanners do not read inverted codes) by MIN_CONTRAST.
 */
export function resolvePalette(fg: string | undefined, bg: string | undefined): QrPalette {
  const dark = parseColour(fg) ?? BLACK;
  const light = parseColour(bg) ?? WHITE;
  if (dark === BLACK && light === WHITE) return DEFAULT_PALETTE; // the usual request: no colour given
  // contrast() < 1 when the modules are the lighter colour, so one comparison covers both rules.
  return contrast(dark, light) >= MIN_CONTRAST ? { dark, light } : DEFAULT_PALETTE;
}

/** True for black on white, which the 1-bit greyscale PNG encodes without a palette. */
export const isDefaultPalette = ({ dark, light }: QrPalette): boolean =>
  dark.r === 0 && dark.g === 0 && dark.b === 0 && light.r === 255 && light.g === 255 && light.b === 255;
