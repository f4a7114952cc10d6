package identity

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "cluster.identity"

// Interval is the time between two checks when the last one read at most ListedPerInterval resources.
const Interval = time.Minute

// ListedPerInterval and MaxInterval space the checks by what they cost: a check lists every instance and launch
// template carrying the cluster's name (at 5,000 instances about a second of CPU and 100 MB of XML decoded,
// once a minute the controller's largest allocation at rest), so after reading n resources the next check comes
// Interval × ⌈n / ListedPerInterval⌉ later, at most MaxInterval: 1 minute up to 500 instances, 10 at 5,000.
const (
	ListedPerInterval = 500
	MaxInterval       = 15 * time.Minute
)

// nextCheck is the wait after a check that read listed resources.
func nextCheck(listed int) time.Duration {
	return min(MaxInterval, Interval*time.Duration(max(1, (listed+ListedPerInterval-1)/ListedPerInterval)))
}

// ReasonNameConflict is the reason of the Warning event about another cluster using this cluster's name.
const ReasonNameConflict = "ClusterNameConflict"

// maxListed bounds the resource ids an event names.
const maxListed = 3

// Controller checks for other clusters using this cluster's name.
type Controller struct {
	deps deps.Deps

	mu sync.Mutex
	// warned holds the UIDs of the other clusters already reported by an event.
	warned map[string]bool
	// listed is what the last successful check read (nextCheck).
	listed int
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d, warned: map[string]bool{}} }

// Register runs a check at start and then every Interval, or less often as the cluster grows (nextCheck), on the
// injected clock while the manager is leader. It registers nothing when the cloud provider cannot detect
// conflicts.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.deps.NameConflicts == nil {
		return nil
	}
	return m.Add(deps.PeriodicBy(Name, c.deps.Clock, c.Next, "cluster identity check failed; the next one retries", c.Reconcile))
}

// Next is the wait before the next check: nextCheck of what the last successful check read.
func (c *Controller) Next() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return nextCheck(c.listed)
}

// Reconcile runs one check: it sets the gauge and records an event for each other cluster not reported yet.
func (c *Controller) Reconcile(ctx context.Context) error {
	ctx = metrics.WithController(ctx, Name)
	check, err := c.deps.NameConflicts.NameConflicts(ctx)
	if err != nil {
		return fmt.Errorf("looking for other clusters named %s: %w", c.clusterName(), err)
	}
	if c.deps.Metrics != nil {
		c.deps.Metrics.ClusterNameConflicts.Set(float64(len(check.Conflicts)))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listed = check.Listed
	for _, cf := range check.Conflicts {
		if c.warned[cf.ClusterUID] {
			continue
		}
		c.warned[cf.ClusterUID] = true
		listed := cf.Resources[:min(len(cf.Resources), maxListed)]
		more := ""
		if n := len(cf.Resources) - len(listed); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		log.FromContext(ctx).Info("another cluster uses this cluster's name in the account; leaving its resources alone",
			"cluster-name", c.clusterName(), "other-cluster-uid", cf.ClusterUID, "resources", len(cf.Resources), "examples", listed)
		c.deps.Recorder.Eventf(kubeSystem(), corev1.EventTypeWarning, ReasonNameConflict,
			"Another cluster (UID %s) uses the cluster name %q in this cloud account: %s%s carry the name. Dovetail never acts on them, "+
				"but cost reports, limits and IAM policies keyed on the name alone mix the two clusters; give each cluster its own name",
			cf.ClusterUID, c.clusterName(), strings.Join(listed, ", "), more)
	}
	return nil
}

func (c *Controller) clusterName() string {
	if c.deps.Settings == nil {
		return ""
	}
	return c.deps.Settings.ClusterName
}

// kubeSystem is the object the events are about: the namespace whose UID is this cluster's identity.
func kubeSystem() *corev1.Namespace {
	return &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem}}
}
