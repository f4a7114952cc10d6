package framework

import (
	"context"
	"fmt"
	"path/filepath"
)

// UpPair starts two stacks that share one AWS simulator, so one simulated account: a's stack runs the
// simulator, which also serves b's cluster (each instance's Node goes to the cluster whose API server its user
// data names), and b's controller calls a's simulator. Give both the same ClusterName to model two clusters
// sharing a name, and distinct state folders and port bases (ports are used from PortBase to PortBase+89).
// Callers should Down both stacks (b first) even when UpPair fails; a nil stack was not started.
func UpPair(ctx context.Context, a, b Options) (*Stack, *Stack, error) {
	if a.PortBase == b.PortBase || a.StateDir == b.StateDir {
		return nil, nil, fmt.Errorf("the two stacks need their own port bases and state folders")
	}
	// b's control plane first: the simulator connects to its API server when it starts.
	sb := &Stack{Options: b, RepoRoot: RepoRoot()}
	if err := sb.ClusterUp(ctx); err != nil {
		return nil, sb, fmt.Errorf("starting the second control plane: %w", err)
	}
	a.SimulatorFlags = append(append([]string(nil), a.SimulatorFlags...),
		"--other-cluster-kubeconfig="+filepath.Join(b.StateDir, "cluster", "kubeconfig"))
	sa, err := Up(ctx, a)
	if err != nil {
		return sa, sb, fmt.Errorf("starting the first stack: %w", err)
	}
	b.SharedSimulator = sa.AWSEndpoint
	sb, err = Up(ctx, b)
	if err != nil {
		return sa, sb, fmt.Errorf("starting the second stack: %w", err)
	}
	return sa, sb, nil
}
