package disruptionview

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// View is what one disruption pass reads of the cluster. The disruption controller reads it from its cache; dovetailctl
// explain node reads the same from the API server, so both decide on the same snapshot.
type View struct {
	// Now is when the pass runs.
	Now time.Time
	// Claims are every NodeClaim, sorted by name.
	Claims []karpv1.NodeClaim
	// Nodes are every Node by name, and Pods every pod. Read from the controller's cache they share their maps
	// and slices with it (no copy: 11,000 pods copied on every pass were most of the controller's memory at
	// 1,000 nodes): they are read-only, and code that changes one works on a DeepCopy.
	Nodes map[string]*corev1.Node
	Pods  []corev1.Pod
	// NodePools are the NodePools not being deleted, by name; AllNodePools every NodePool, as listed.
	NodePools    map[string]*karpv1.NodePool
	AllNodePools []*karpv1.NodePool
	// PodDisruptionBudgets are every PodDisruptionBudget.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
}

// Observe lists what a disruption pass reads. It only reads: grouping the commands in progress is the disruption
// controller's.
func Observe(ctx context.Context, c client.Reader, now time.Time) (*View, error) {
	var (
		claims karpv1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
		pools  karpv1.NodePoolList
		pdbs   policyv1.PodDisruptionBudgetList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
		opts []client.ListOption
	}{
		// NodeClaims are copied: a pass records commands on them and marks them deleted in place.
		{"nodeclaims", &claims, nil},
		{"nodes", &nodes, []client.ListOption{client.UnsafeDisableDeepCopy}},
		{"pods", &pods, []client.ListOption{client.UnsafeDisableDeepCopy}},
		{"nodepools", &pools, nil},
		{"poddisruptionbudgets", &pdbs, nil},
	} {
		if err := c.List(ctx, l.list, l.opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	v := &View{Now: now, Claims: claims.Items, Nodes: map[string]*corev1.Node{}, Pods: pods.Items, NodePools: map[string]*karpv1.NodePool{}}
	sort.Slice(v.Claims, func(i, j int) bool { return v.Claims[i].Name < v.Claims[j].Name })
	for i := range nodes.Items {
		v.Nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		v.AllNodePools = append(v.AllNodePools, np)
		if np.DeletionTimestamp.IsZero() {
			v.NodePools[np.Name] = np
		}
	}
	for i := range pdbs.Items {
		v.PodDisruptionBudgets = append(v.PodDisruptionBudgets, &pdbs.Items[i])
	}
	return v, nil
}
