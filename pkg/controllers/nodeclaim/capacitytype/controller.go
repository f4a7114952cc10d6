package capacitytype

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics (Karpenter's capacityreservation.capacitytype).
const Name = "capacityreservation.capacitytype"

// Interval is the time between two passes (Karpenter's).
const Interval = time.Minute

// reservationLabels are the labels that describe a reservation, removed with the reserved capacity type (the
// labels Karpenter removes: the reservation's id and type).
var reservationLabels = []string{awsv1.LabelCapacityReservationID, awsv1.LabelCapacityReservationType}

// Controller relabels reserved NodeClaims and Nodes whose instance now runs as on-demand.
type Controller struct{ deps deps.Deps }

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register runs a pass every Interval (on the injected clock) while the manager is leader.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "capacity type sync failed; the next pass retries", c.Reconcile))
}

// Demote says whether a NodeClaim (or Node) labelled with labels must become on-demand, given the capacity type
// the cloud reports for its instance: only reserved becomes on-demand (an on-demand instance is never promoted
// into a reservation, and a spot one never changes).
func Demote(labels map[string]string, cloudCapacityType string) bool {
	return cloudCapacityType == cloudprovider.CapacityTypeOnDemand && labels[karpv1.CapacityTypeLabelKey] == cloudprovider.CapacityTypeReserved
}

// demoted returns labels with the on-demand capacity type and without the reservation's labels.
func demoted(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	out[karpv1.CapacityTypeLabelKey] = cloudprovider.CapacityTypeOnDemand
	for _, k := range reservationLabels {
		delete(out, k)
	}
	return out
}

// Reconcile runs one pass: every live NodeClaim whose instance the cloud now reports on-demand while it is
// labelled reserved is relabelled, and so are its registered Nodes.
func (c *Controller) Reconcile(ctx context.Context) error {
	ctx = metrics.WithController(ctx, Name)
	// The cache's objects, not copies (a pass that finds nothing reserved writes nothing; sync copies what it
	// writes): deep copying every NodeClaim and Node each minute was 3 GB allocated in a 5,000-node run.
	claims := &karpv1.NodeClaimList{}
	if err := c.deps.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	sort.Slice(claims.Items, func(i, j int) bool { return claims.Items[i].Name < claims.Items[j].Name })
	nodes := &corev1.NodeList{}
	if err := c.deps.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	// Only what is labelled reserved can be relabelled: without any, the cloud is not asked (a listing of 5,000
	// instances is about 1 s of CPU, every minute).
	if !anyReserved(claims.Items, nodes.Items) {
		return nil
	}
	instances, err := c.deps.CloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	cloudType := make(map[string]string, len(instances))
	for _, inst := range instances {
		cloudType[inst.Status.ProviderID] = inst.Labels[karpv1.CapacityTypeLabelKey]
	}
	nodesOf := map[string][]*corev1.Node{}
	for i := range nodes.Items {
		if id := nodes.Items[i].Spec.ProviderID; id != "" {
			nodesOf[id] = append(nodesOf[id], &nodes.Items[i])
		}
	}
	var errs []error
	for i := range claims.Items {
		nc := &claims.Items[i]
		ct, ok := cloudType[nc.Status.ProviderID]
		// A NodeClaim being deleted is draining anyway.
		if !ok || nc.Status.ProviderID == "" || !nc.DeletionTimestamp.IsZero() || ct != cloudprovider.CapacityTypeOnDemand {
			continue
		}
		if err := c.sync(ctx, nc, nodesOf[nc.Status.ProviderID]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// anyReserved reports whether a NodeClaim or a Node is labelled with the reserved capacity type.
func anyReserved(claims []karpv1.NodeClaim, nodes []corev1.Node) bool {
	for i := range claims {
		if claims[i].Labels[karpv1.CapacityTypeLabelKey] == cloudprovider.CapacityTypeReserved {
			return true
		}
	}
	for i := range nodes {
		if nodes[i].Labels[karpv1.CapacityTypeLabelKey] == cloudprovider.CapacityTypeReserved {
			return true
		}
	}
	return false
}

// sync relabels one NodeClaim and its registered Nodes (a Node not registered yet gets its labels from the
// NodeClaim when it registers; a NodeClaim whose reservation ended before launch completed may have no Node).
// nc and nodes are the cache's: what is written is a copy.
func (c *Controller) sync(ctx context.Context, cached *karpv1.NodeClaim, nodes []*corev1.Node) error {
	logger := log.FromContext(ctx)
	nc := cached
	if Demote(nc.Labels, cloudprovider.CapacityTypeOnDemand) {
		patch := client.MergeFrom(cached)
		nc = cached.DeepCopy()
		nc.Labels = demoted(nc.Labels)
		if err := c.deps.Client.Patch(ctx, nc, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("relabelling nodeclaim %s on-demand: %w", nc.Name, err)
		}
		logger.Info("capacity reservation ended: nodeclaim is on-demand now", "nodeclaim", nc.Name)
	}
	for _, n := range nodes {
		if !n.DeletionTimestamp.IsZero() ||
			n.Labels[karpv1.NodeRegisteredLabelKey] != "true" || !Demote(n.Labels, cloudprovider.CapacityTypeOnDemand) {
			continue
		}
		patch := client.MergeFrom(n)
		n := n.DeepCopy()
		n.Labels = demoted(n.Labels)
		if err := c.deps.Client.Patch(ctx, n, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("relabelling node %s on-demand: %w", n.Name, err)
		}
		logger.Info("capacity reservation ended: node is on-demand now", "node", n.Name, "nodeclaim", nc.Name)
	}
	return nil
}
