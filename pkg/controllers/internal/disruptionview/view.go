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
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// View is what one disruption pass reads of the cluster. The disruption controller reads it from its cache; dovetailctl
// explain node reads the same from the API server, so both decide on the same snapshot.
type View struct {
	// Now is when the pass runs.
	Now time.Time
	// Claims are every NodeClaim, sorted by name.
	Claims []karpv1.NodeClaim
	// Nodes are every Node by name, and Pods every pod. Read from the controller's cache they are the cache's
	// (ObserveCached: the pods the informer's own objects, not even their structs copied, which at 50,000 pods
	// was 58 MB a pass; the Nodes struct copies sharing maps and slices): they are read-only, and code that
	// changes one works on a DeepCopy.
	Nodes map[string]*corev1.Node
	Pods  []*corev1.Pod
	// NodePools are the NodePools not being deleted, by name; AllNodePools every NodePool, as listed.
	NodePools    map[string]*karpv1.NodePool
	AllNodePools []*karpv1.NodePool
	// PodDisruptionBudgets are every PodDisruptionBudget.
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
}

// Observe lists what a disruption pass reads. It only reads: grouping the commands in progress is the disruption
// controller's.
func Observe(ctx context.Context, c client.Reader, now time.Time) (*View, error) {
	return observe(ctx, c, now, nil)
}

// ObserveCached is Observe from a controller's cache: the pods are walked in the informer's store (d.EachCachedPod).
func ObserveCached(ctx context.Context, d deps.Deps, now time.Time) (*View, error) {
	return observe(ctx, d.Client, now, d.EachCachedPod)
}

// observe is Observe; eachPod, when set, gives the pods instead of a list through c.
func observe(ctx context.Context, c client.Reader, now time.Time, eachPod func(context.Context, func(*corev1.Pod)) error) (*View, error) {
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
		{"nodepools", &pools, nil},
		{"poddisruptionbudgets", &pdbs, nil},
	} {
		if err := c.List(ctx, l.list, l.opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	v := &View{Now: now, Claims: claims.Items, Nodes: map[string]*corev1.Node{}, NodePools: map[string]*karpv1.NodePool{}}
	if eachPod != nil {
		if err := eachPod(ctx, func(p *corev1.Pod) { v.Pods = append(v.Pods, p) }); err != nil {
			return nil, err
		}
	} else {
		if err := c.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing pods: %w", err)
		}
		v.Pods = make([]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			v.Pods[i] = &pods.Items[i]
		}
	}
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
