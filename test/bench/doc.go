// Package bench measures Dovetail on the local stack (control plane, AWS simulator, controller as separate
// processes): scale-out of 1,000 pending pods and mass deletion of 500 nodes under a PodDisruptionBudget. The
// benchmarks are tests behind the `bench` build tag; they print figures and fail only when the workload never
// converges. Run with `make bench-stack`; results go to docs/benchmarks.md ("Local stack").
package bench
