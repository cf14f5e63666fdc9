import type { TSchema, Static } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { TabwireError } from '../errors.js';
import { textFormatDetail } from './schema-text.js';

/** A compiled schema check that throws validation_failed naming every bad field. */
export function compileValidator<T extends TSchema>(schema: T): (value: unknown) => Static<T> {
  const check: TypeCheck<T> = TypeCompiler.Compile(schema);
  return (value) => {
    if (check.Check(value)) return value;
    const errors = [...check.Errors(value)].map((e) => ({ pointer: e.path === '' ? '/' : e.path, detail: describe(e.schema, e.message) }));
    throw new TabwireError('validation_failed', errors.map((e) => `${e.pointer} ${e.detail}`).join('; '), { errors });
  };
}

/** TypeBox says "Expected union value" for a union of literals; name the allowed values instead. Text rules say what they refuse. */
function describe(schema: TSchema, message: string): string {
  const text = textFormatDetail((schema as { format?: unknown }).format);
  if (text !== undefined && message.includes('format')) return text;
  const options = (schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (options?.every((o) => o.const !== undefined)) return `must be one of: ${options.map((o) => String(o.const)).join(', ')}`;
  return message;
}
