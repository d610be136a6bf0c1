#if defined(__linux__)
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#endif
#include "latch_sqlite_shim.h"
#include "sqlite_nio_sqlite3.h"

int latch_sqlite_enable_qpsg(void *db) {
    return sqlite_nio_sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, (int *)0);
}

void latch_name_current_thread(const char *name) {
#if defined(__linux__)
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
#else
    (void)name;
#endif
}
