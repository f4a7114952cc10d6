package explain

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Reasons of a False PlacementGroupReady condition on an EC2NodeClass (set by the node class status controller).
const (
	reasonPlacementGroupNotFound         = "PlacementGroupNotFound"
	reasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
)

// nodeClassNotes are warnings about the EC2NodeClasses the NodePools launch with that change which nodes the
// controller can launch: a placement group that is not ready (no launch at all from the class), and efa-only
// network interfaces (instance types with fewer EFA interfaces are left out). Sorted by node class.
func nodeClassNotes(pools []*karpv1.NodePool, classes []*awsv1.EC2NodeClass) []string {
	usedBy := map[string][]string{}
	for _, np := range pools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name != "" {
			usedBy[ref.Name] = append(usedBy[ref.Name], np.Name)
		}
	}
	sorted := make([]*awsv1.EC2NodeClass, 0, len(classes))
	for _, nc := range classes {
		if len(usedBy[nc.Name]) > 0 {
			sorted = append(sorted, nc)
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out []string
	for _, nc := range sorted {
		pools := usedBy[nc.Name]
		sort.Strings(pools)
		if note := placementGroupNote(nc, pools); note != "" {
			out = append(out, note)
		}
		if note := efaNote(nc); note != "" {
			out = append(out, note)
		}
	}
	return out
}

// placementGroupNote explains a False PlacementGroupReady condition, with the fix for its reason.
func placementGroupNote(nc *awsv1.EC2NodeClass, pools []string) string {
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	var fix string
	switch c.Reason {
	case reasonPlacementGroupNotFound:
		fix = "create the placement group in the cluster's region, or make spec.placementGroupSelector name an existing one"
	case reasonPlacementGroupResolutionFailed:
		fix = "check the controller's ec2:DescribePlacementGroups permission and the selector (dovetailctl doctor); the controller retries"
	default:
		fix = "see the EC2NodeClass's status conditions"
	}
	return fmt.Sprintf("EC2NodeClass %s is not ready: PlacementGroupReady=False (%s): %s; NodePool(s) %v launch no node until it is: %s",
		nc.Name, c.Reason, c.Message, pools, fix)
}

// efaNote says which instance types efa-only network interfaces leave out.
func efaNote(nc *awsv1.EC2NodeClass) string {
	n := 0
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("EC2NodeClass %s asks for %d efa-only network interface(s): instance types without that many EFA interfaces (or without the network cards and device indexes spec.networkInterfaces names) are left out",
		nc.Name, n)
}
