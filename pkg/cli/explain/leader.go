package explain

import (
	"context"
	"fmt"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/leaderlease"
)

// notLeading returns one sentence per leader Lease named o.LeaseName (in any namespace) that another autoscaler
// holds and renews: while one is, the controller neither provisions nor disrupts. A Lease that cannot be read
// gives a warning instead.
func (o *Options) notLeading(ctx context.Context, c client.Reader) (notes []string, warning string) {
	name := o.LeaseName
	if name == "" {
		name = leaderlease.DefaultName
	}
	list := &coordinationv1.LeaseList{}
	if err := c.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
		return nil, fmt.Sprintf("cannot read the leader leases named %s (whether Karpenter leads instead of Dovetail): %v", name, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Namespace < list.Items[j].Namespace })
	now := o.now()
	for i := range list.Items {
		l := &list.Items[i]
		h := leaderlease.HoldOf(l)
		if !leaderlease.Renewed(l, now) || h.Kind == leaderlease.KindDovetail {
			continue
		}
		where := ""
		if ns := o.controllerNamespace(); l.Namespace != ns {
			where = fmt.Sprintf(", in another namespace than the controller's %s", ns)
		}
		notes = append(notes, fmt.Sprintf("Dovetail is not leading: %s holds the leader lease %s (holder %s, renewed %s ago%s); Dovetail neither provisions nor disrupts until it lapses, so no node is launched for this pod meanwhile",
			h.Kind.Who(), h.Key(), h.Holder, now.Sub(h.RenewTime).Round(time.Second), where))
	}
	return notes, ""
}

func (o *Options) controllerNamespace() string {
	if o.ControllerNamespace == "" {
		return "kube-system"
	}
	return o.ControllerNamespace
}
