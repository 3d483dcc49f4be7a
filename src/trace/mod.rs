//! Trace IR: per-rank node DAG the engine runs.
