#include "latch_sqlite_shim.h"
#include "sqlite_nio_sqlite3.h"

int latch_sqlite_enable_qpsg(void *db) {
    return sqlite_nio_sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, (int *)0);
}
