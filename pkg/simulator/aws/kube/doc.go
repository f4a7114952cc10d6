// Package kube implements the simulator's NodeSink with client-go: it creates, untaints and deletes the
// kwok-managed Nodes of simulated EC2 instances in a real (local) Kubernetes API server.
package kube
