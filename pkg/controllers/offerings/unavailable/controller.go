// Package unavailable publishes the offerings the cloud provider holds unavailable (refused for lack of capacity)
// in a ConfigMap of the controller's namespace, so that `dovetailctl explain` sees what the controller sees.
package unavailable

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs and metrics.
const Name = "offerings.unavailable"

// Interval is how often the list is compared with what was last published.
const Interval = 5 * time.Second

// Controller publishes the cloud provider's unavailable offerings.
type Controller struct {
	deps deps.Deps
	// published is the data last written (only the loop goroutine touches it).
	published string
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register runs Reconcile at start and every Interval (on the injected clock) while the manager is leader. It
// registers nothing when the cloud provider does not remember refused offerings.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.deps.UnavailableOfferings == nil || c.deps.KubeClient == nil {
		return nil
	}
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "publishing unavailable offerings failed; the next pass retries", c.Reconcile))
}

// Reconcile writes the ConfigMap when the list changed since the last write (the first pass always writes, so
// a list left by an earlier process is replaced). Reads and writes go to the API server, not a cache: caching
// ConfigMaps would watch every ConfigMap of the cluster for this one.
func (c *Controller) Reconcile(ctx context.Context) error {
	ctx = metrics.WithController(ctx, Name)
	data, err := cloudprovider.EncodeUnavailableOfferings(c.deps.UnavailableOfferings.UnavailableOfferings())
	if err != nil {
		return err
	}
	if data == c.published {
		return nil
	}
	ns := c.deps.Namespace
	if ns == "" {
		ns = metav1.NamespaceSystem
	}
	cms := c.deps.KubeClient.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, cloudprovider.UnavailableOfferingsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.UnavailableOfferingsConfigMap, Namespace: ns,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "dovetail"}},
			Data: map[string]string{cloudprovider.UnavailableOfferingsKey: data},
		}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cloudprovider.UnavailableOfferingsConfigMap, err)
		}
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s: %w", ns, cloudprovider.UnavailableOfferingsConfigMap, err)
	default:
		if cm.Data[cloudprovider.UnavailableOfferingsKey] != data {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[cloudprovider.UnavailableOfferingsKey] = data
			// A conflict (another writer in between) is returned and retried on the next pass.
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating ConfigMap %s/%s: %w", ns, cloudprovider.UnavailableOfferingsConfigMap, err)
			}
		}
	}
	c.published = data
	return nil
}
