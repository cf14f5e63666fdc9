/**
 * Registered with `--import` in every benchmark child (child-registry.ts), after tsx's loader: the
 * child's own TypeScript (bench/servers/*.ts, bench/lib/*.ts) still runs through tsx, but every module
 * of src/ is loaded from its built form in dist/, as `npm start` runs it. See shipped-code-hooks.mjs.
 */
import { register } from 'node:module';

register('./shipped-code-hooks.mjs', import.meta.url);
