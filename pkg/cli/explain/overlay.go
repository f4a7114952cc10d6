package explain

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/simulate"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// overlayNotes says which NodeOverlays changed the offering (name, zone, capacity type) among its: the one that
// set its price (with the cloud's price) and those that added capacity. None when no overlay touched it.
func overlayNotes(its []*cloudprovider.InstanceType, name, zone, capacityType string) []string {
	var out []string
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType && o.PriceOverlay != "" {
				out = append(out, fmt.Sprintf("NodeOverlay %s sets the price of %s (%s, %s): $%.4f/h instead of the cloud's $%.4f/h",
					o.PriceOverlay, name, zone, capacityType, o.Price, o.CloudPrice))
			}
		}
		var names []string
		for r := range it.CapacityOverlays {
			names = append(names, string(r))
		}
		sort.Strings(names)
		for _, r := range names {
			q := it.Capacity[corev1.ResourceName(r)]
			out = append(out, fmt.Sprintf("NodeOverlay %s adds %s: %s to %s", it.CapacityOverlays[corev1.ResourceName(r)], r, q.String(), name))
		}
	}
	return out
}

// applyClusterOverlays applies the cluster's NodeOverlays to its as the controller does and appends a warning for
// each overlay left out.
func applyClusterOverlays(ctx context.Context, c client.Reader, pools []*karpv1.NodePool, its map[string][]*cloudprovider.InstanceType, warnings []string) ([]string, error) {
	overlays, err := simulate.ClusterOverlays(ctx, c)
	if err != nil {
		return nil, err
	}
	for _, na := range simulate.ApplyOverlays(overlays, pools, its) {
		warnings = append(warnings, fmt.Sprintf("NodeOverlay %s is not applied (%s): %s", na.NodeOverlay, na.Reason, na.Message))
	}
	return warnings, nil
}
