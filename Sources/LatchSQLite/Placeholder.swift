import SQLiteNIO
import VaporCSQLite
func probe() -> Int32 { sqlite_nio_sqlite3_libversion_number() }
