import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding tabwire's package.json, found from this module's own location, so assets
 * (`public/`, the built `dist/public/Events.js`) resolve the same from `src/` (tests) and `dist/`.
 */
export function packageRoot(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('tabwire package root not found');
    dir = parent;
  }
  return dir;
}
