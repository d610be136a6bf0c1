#ifndef LATCH_SQLITE_SHIM_H
#define LATCH_SQLITE_SHIM_H

/// Turns on SQLite's query planner stability guarantee for a connection: plans never depend on bound values,
/// so prepared statements are not re-prepared when parameters are rebound. Returns an SQLite result code.
/// (sqlite3_db_config is variadic, which Swift cannot call.)
int latch_sqlite_enable_qpsg(void *db);

/// Names the calling thread where the system shows it (`top -H`, `perf`, `/proc/<pid>/task/*/comm`); Linux keeps
/// at most 15 bytes. Does nothing elsewhere. (pthread_setname_np needs _GNU_SOURCE, which Swift's Glibc lacks.)
void latch_name_current_thread(const char *name);

#endif
