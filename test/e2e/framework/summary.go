package framework

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/catalog"
)

// Progress is a count of where a workload and the nodes launched for it stand.
type Progress struct {
	Pods, PodsRunning                             int
	NodeClaims, Launched, Registered, Initialized int
	Nodes                                         int
}

// String renders the progress on one line.
func (p Progress) String() string {
	return fmt.Sprintf("pods %d/%d Running · nodeclaims %d (launched %d, registered %d, initialized %d) · nodes %d",
		p.PodsRunning, p.Pods, p.NodeClaims, p.Launched, p.Registered, p.Initialized, p.Nodes)
}

// Done reports whether every pod is Running.
func (p Progress) Done() bool { return p.Pods > 0 && p.PodsRunning == p.Pods }

// GetProgress counts the pods matching selector in namespace, the NodeClaims by condition and the Nodes
// launched by Dovetail (those with the karpenter.sh/nodepool label).
func GetProgress(ctx context.Context, c client.Client, namespace string, selector client.MatchingLabels) (Progress, error) {
	var p Progress
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), selector); err != nil {
		return p, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil {
			continue
		}
		p.Pods++
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			p.PodsRunning++
		}
	}
	claims := &karpv1.NodeClaimList{}
	if err := c.List(ctx, claims); err != nil {
		return p, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range claims.Items {
		conds := claims.Items[i].Status.Conditions
		p.NodeClaims++
		if meta.IsStatusConditionTrue(conds, karpv1.ConditionTypeLaunched) {
			p.Launched++
		}
		if meta.IsStatusConditionTrue(conds, karpv1.ConditionTypeRegistered) {
			p.Registered++
		}
		if meta.IsStatusConditionTrue(conds, karpv1.ConditionTypeInitialized) {
			p.Initialized++
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return p, fmt.Errorf("listing nodes: %w", err)
	}
	p.Nodes = len(nodes.Items)
	return p, nil
}

// NodeGroup is a set of launched nodes with the same instance type, zone and capacity type.
type NodeGroup struct {
	InstanceType, Zone, CapacityType string
	Count                            int
	// HourlyPrice is the price of one node of the group in US dollars, from the built-in catalog.
	HourlyPrice float64
}

// Summary describes the nodes Dovetail launched.
type Summary struct {
	Groups     []NodeGroup
	Nodes      int
	HourlyCost float64
	// Unpriced lists instance types the catalog has no price for.
	Unpriced []string
}

// Summarize groups the nodes Dovetail launched by instance type, zone and capacity type and prices them with the
// built-in catalog (the same figures the AWS simulator serves).
func Summarize(ctx context.Context, c client.Client, region string) (*Summary, error) {
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the instance catalog: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	groups := map[NodeGroup]int{}
	for i := range nodes.Items {
		l := nodes.Items[i].Labels
		groups[NodeGroup{InstanceType: l[corev1.LabelInstanceTypeStable], Zone: l[corev1.LabelTopologyZone], CapacityType: l[karpv1.CapacityTypeLabelKey]}]++
	}
	s := &Summary{}
	unpriced := map[string]bool{}
	for g, n := range groups {
		g.Count = n
		if t, ok := cat.Type(g.InstanceType); ok {
			var price float64
			var found bool
			if g.CapacityType == karpv1.CapacityTypeSpot {
				price, found = t.SpotPrice(region, g.Zone)
			} else {
				price, found = t.OnDemandPrice(region)
			}
			if found {
				g.HourlyPrice = price
			} else {
				unpriced[g.InstanceType] = true
			}
		} else {
			unpriced[g.InstanceType] = true
		}
		s.Groups = append(s.Groups, g)
		s.Nodes += n
		s.HourlyCost += float64(n) * g.HourlyPrice
	}
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.CapacityType < b.CapacityType
	})
	for t := range unpriced {
		s.Unpriced = append(s.Unpriced, t)
	}
	sort.Strings(s.Unpriced)
	return s, nil
}

// Print writes the summary as a table.
func (s *Summary) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE TYPE\tZONE\tCAPACITY TYPE\tNODES\t$/HOUR EACH\t$/HOUR")
	for _, g := range s.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.4f\t%.4f\n", g.InstanceType, g.Zone, g.CapacityType, g.Count, g.HourlyPrice, float64(g.Count)*g.HourlyPrice)
	}
	fmt.Fprintf(tw, "TOTAL\t\t\t%d\t\t%.4f\n", s.Nodes, s.HourlyCost)
	_ = tw.Flush()
	if len(s.Unpriced) > 0 {
		fmt.Fprintf(w, "(no catalog price for: %s)\n", strings.Join(s.Unpriced, ", "))
	}
}
