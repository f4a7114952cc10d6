package instanceprofilegc

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics (Karpenter's).
const Name = "instanceprofile.garbagecollection"

// Interval is the time between two passes (Karpenter's).
const Interval = 30 * time.Minute

// Collector deletes the instance profiles no node class or instance needs and returns their names; the AWS
// cloud provider is one.
type Collector interface {
	CollectInstanceProfiles(ctx context.Context, classes []awsv1.EC2NodeClass) ([]string, error)
}

// Controller runs the collection.
type Controller struct{ deps deps.Deps }

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// collector is the cloud provider's Collector; nil when it has none or IAM must not be called (ISOLATED_VPC).
func (c *Controller) collector() Collector {
	if c.deps.Settings != nil && c.deps.Settings.IsolatedVPC {
		return nil
	}
	col, _ := c.deps.CloudProvider.(Collector)
	return col
}

// Register runs a pass every Interval (on the injected clock) while the manager is leader; nothing when there is
// no collector.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.collector() == nil {
		return nil
	}
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "instance profile garbage collection failed; the next pass retries", func(ctx context.Context) error {
		_, err := c.Reconcile(ctx)
		return err
	}))
}

// Reconcile runs one pass and returns the profiles it deleted.
func (c *Controller) Reconcile(ctx context.Context) ([]string, error) {
	col := c.collector()
	if col == nil {
		return nil, nil
	}
	ctx = metrics.WithController(ctx, Name)
	classes := &awsv1.EC2NodeClassList{}
	if err := c.deps.Client.List(ctx, classes); err != nil {
		return nil, fmt.Errorf("listing ec2nodeclasses: %w", err)
	}
	deleted, err := col.CollectInstanceProfiles(ctx, classes.Items)
	if err != nil {
		return deleted, fmt.Errorf("collecting instance profiles: %w", err)
	}
	return deleted, nil
}
