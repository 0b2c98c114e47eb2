pub mod kbuild;
pub mod pgbench;
pub mod workload;
