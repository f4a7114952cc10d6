package clusterinput

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
)

// learnedVolumeLimits returns, by instance type name and CSI driver, the smallest attach limit the CSINodes of
// the cluster's nodes of that type report (the node.kubernetes.io/instance-type label names the type).
func learnedVolumeLimits(nodes []solver.ExistingNode) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, n := range nodes {
		typ := n.Node.Labels[corev1.LabelInstanceTypeStable]
		if typ == "" || len(n.VolumeLimits) == 0 {
			continue
		}
		if out[typ] == nil {
			out[typ] = map[string]int{}
		}
		for driver, limit := range n.VolumeLimits {
			if have, ok := out[typ][driver]; !ok || limit < have {
				out[typ][driver] = limit
			}
		}
	}
	return out
}

// withLearnedVolumeLimits gives new nodes of an instance type the attach limits its existing nodes' CSINodes
// report, for the drivers the cloud provider names no limit for (the AWS provider names none, as Karpenter's):
// a scale-out of pods with volumes then launches enough nodes at once instead of finding the limit node by node.
// Types no node reports stay unlimited. The instance types are not changed: a type that learns a limit is
// replaced by a copy, one per type for the whole pass (copies holds them).
func withLearnedVolumeLimits(its []*cloudprovider.InstanceType, learned map[string]map[string]int, copies map[*cloudprovider.InstanceType]*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if len(learned) == 0 {
		return its
	}
	var out []*cloudprovider.InstanceType
	for i, it := range its {
		c, ok := copies[it]
		if !ok {
			c = it
			var drivers []string
			for driver := range learned[it.Name] {
				if _, named := it.VolumeLimits[driver]; !named {
					drivers = append(drivers, driver)
				}
			}
			if len(drivers) > 0 {
				sort.Strings(drivers)
				cp := *it
				cp.VolumeLimits = make(map[string]int, len(it.VolumeLimits)+len(drivers))
				for d, l := range it.VolumeLimits {
					cp.VolumeLimits[d] = l
				}
				for _, d := range drivers {
					cp.VolumeLimits[d] = learned[it.Name][d]
				}
				c = &cp
			}
			copies[it] = c
		}
		if c != it && out == nil {
			out = append(make([]*cloudprovider.InstanceType, 0, len(its)), its[:i]...)
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return its
	}
	return out
}

// boundWithClaims returns the pods bound to the nodes whose CSINodes report attach limits that use persistent
// volume claims: the volumes they hold leave the node less room for new ones.
func boundWithClaims(nodes []solver.ExistingNode) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range nodes {
		if len(n.VolumeLimits) == 0 {
			continue
		}
		for _, p := range n.Pods {
			if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.PersistentVolumeClaim != nil }) {
				out = append(out, p)
			}
		}
	}
	return out
}
