// Package scheduletest generates scheduling snapshots for tests outside package scheduling: the seeded random
// workloads that mix every constraint family, and the benchmark mix. The random-workload oracle tests and the
// upstream-plugin oracle (test/oracle) solve the same snapshots.
package scheduletest
