import type { CompiledQuery, Kysely, Selectable } from 'kysely';
import type { CodesTable, Database, IdentitiesTable } from '../schema.js';
import type { SignatureInputs, SignatureReads } from '../signature-reads.js';
import { toCode } from './code-store.js';
import { COLUMN_RULES } from './column-rules.js';
import { withParameters } from './group-commit.js';
import { toIdentity } from './identity-store.js';

const IDENTITY_COLUMNS = Object.keys(COLUMN_RULES.identities) as (keyof IdentitiesTable)[];
/** An identity column under a name no code column has. */
const aliased = (column: keyof IdentitiesTable) => `identity_${column}` as const;

type Row = Selectable<CodesTable> & Record<ReturnType<typeof aliased>, unknown>;

/**
 * The code's row with the named identity's columns beside it: a LEFT JOIN on the identity's id, which no column
 * of the code relates to, adds the one identity row or nulls. Built and compiled once, as the other hot
 * statements: each read only binds its two parameters.
 */
export class SqlSignatureReads implements SignatureReads {
  private readonly statement: CompiledQuery<Row>;

  constructor(private readonly db: Kysely<Database>) {
    this.statement = db
      .selectFrom('codes')
      .leftJoin('identities', (join) => join.on('identities.id', '=', 'identity-placeholder'))
      .selectAll('codes')
      .select(IDENTITY_COLUMNS.map((column) => `identities.${column} as ${aliased(column)}` as const))
      .where('codes.code', '=', 'code-placeholder')
      .compile() as CompiledQuery<Row>;
    // The parameters' order in the compiled text (the join's comes before the WHERE's), checked once.
    if (this.statement.parameters.join() !== ['identity-placeholder', 'code-placeholder'].join()) throw new Error('the signature read compiled its parameters in another order');
  }

  async read(code: string, identityId: string): Promise<SignatureInputs | undefined> {
    const [row] = (await this.db.executeQuery(withParameters(this.statement, [identityId, code]))).rows;
    if (!row) return undefined;
    const identity = row[aliased('id')] === null ? undefined : toIdentity(Object.fromEntries(IDENTITY_COLUMNS.map((c) => [c, row[aliased(c)]])) as Selectable<IdentitiesTable>);
    return { code: toCode(row), identity };
  }
}
