// Package kube implements the simulator's NodeSink with client-go: it creates, untaints and deletes the
// kwok-managed Nodes of simulated EC2 instances, and the ResourceSlices their DRA drivers would publish, in a real
// (local) Kubernetes API server.
package kube
