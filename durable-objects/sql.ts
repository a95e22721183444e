/** Shared by the SQLite-backed objects: whether a table exists yet, a read-only look at the schema (nothing is created to ask). */
export const hasTable = (sql: SqlStorage, name: string): boolean =>
  sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray().length > 0;
