#ifndef LATCH_SQLITE_SHIM_H
#define LATCH_SQLITE_SHIM_H

/// Turns on SQLite's query planner stability guarantee for a connection: plans never depend on bound values,
/// so prepared statements are not re-prepared when parameters are rebound. Returns an SQLite result code.
/// (sqlite3_db_config is variadic, which Swift cannot call.)
int latch_sqlite_enable_qpsg(void *db);

#endif
