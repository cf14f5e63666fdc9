#!/usr/bin/env node
// Draws the wallet's app icons (public/wallet/icon-192.png, icon-512.png): a white key on the wallet's
// blue, inside the middle 80 % so a maskable crop keeps it. Run once by hand; the PNGs are committed.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PNG } from 'pngjs';

const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'public', 'wallet');

function icon(size) {
  const png = new PNG({ width: size, height: size });
  const u = size / 100; // drawing units: the icon is 100 × 100
  const white = (x, y) => {
    const [ux, uy] = [x / u, y / u];
    const ring = Math.hypot(ux - 36, uy - 50);
    if (ring <= 16 && ring >= 8) return true; // the bow
    if (ux >= 50 && ux <= 78 && uy >= 46 && uy <= 54) return true; // the shaft
    if (ux >= 64 && ux <= 70 && uy >= 54 && uy <= 64) return true; // a tooth
    if (ux >= 72 && ux <= 78 && uy >= 54 && uy <= 61) return true; // another
    return false;
  };
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const i = (y * size + x) * 4;
      const [r, g, b] = white(x + 0.5, y + 0.5) ? [255, 255, 255] : [0x24, 0x57, 0xd6];
      png.data[i] = r;
      png.data[i + 1] = g;
      png.data[i + 2] = b;
      png.data[i + 3] = 255;
    }
  }
  writeFileSync(path.join(out, `icon-${size}.png`), PNG.sync.write(png));
}
icon(192);
icon(512);
