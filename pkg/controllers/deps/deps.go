// Package deps carries what every controller needs from the operator, so controllers can be built and tested
// without importing the operator or each other.
package deps

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/overlay"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Deps are the shared dependencies of Dovetail's controllers.
type Deps struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Cache is the manager's informer cache behind Client, for the periodic counts that walk every cached object
	// (EachCachedPod); nil: they list through Client.
	Cache cache.Cache
	// APIReader reads from the API server directly, for the few decisions that must not trust a cache that
	// may lag behind (under load the informers were seen half a minute behind). Nil: Client is used.
	APIReader client.Reader
	// KubeClient is a typed clientset, for subresources such as pods/eviction.
	KubeClient kubernetes.Interface
	// CloudProvider launches and terminates instances.
	CloudProvider cloudprovider.CloudProvider
	// Clock is the source of time; tests inject a fake one.
	Clock clock.Clock
	// Recorder emits Events on the objects controllers act on.
	Recorder record.EventRecorder
	// Settings are the operator's validated settings.
	Settings *settings.Settings
	// Metrics are the Prometheus metrics controllers record (built once by the operator).
	Metrics *metrics.Metrics
	// InterruptionQueue is where interruption messages arrive; nil when INTERRUPTION_QUEUE is empty.
	InterruptionQueue cloudprovider.InterruptionQueue
	// NameConflicts finds other clusters using this cluster's name in the account; nil when the cloud provider
	// cannot tell.
	NameConflicts cloudprovider.NameConflictDetector
	// UnavailableOfferings lists the offerings the cloud refused recently; nil when the cloud provider does not
	// remember them.
	UnavailableOfferings cloudprovider.UnavailableOfferingsLister
	// Namespace is the namespace the controller runs in (its Lease, the unavailable-offerings ConfigMap).
	Namespace string
	// Overlays holds the NodeOverlays the nodeoverlay controller applies; CloudProvider serves instance types
	// through it. Nil when FEATURE_GATES has NodeOverlay=false.
	Overlays *overlay.Store
	// Plans is the provisioner's latest plan, shared with the NodeClaim lifecycle (nil: not shared; the
	// provisioner then keeps its own).
	Plans *Plans
	// RegistrationHealth is the recent registration outcomes of each NodePool, behind its NodeRegistrationHealthy
	// condition (nil: the condition is not maintained).
	RegistrationHealth *RegistrationHealth
	// Buffers is the CapacityBuffer state (virtual pods and where they sit); nil when the CapacityBuffer feature
	// gate is off.
	Buffers *Buffers
	// CapacityLearner learns instance types' real capacity from registered Nodes (nil: the cloud provider's, if it
	// can).
	CapacityLearner cloudprovider.CapacityLearner
	// InstanceStatus lists instances whose status checks fail (nil: the cloud provider's, if it can).
	InstanceStatus cloudprovider.InstanceStatusLister
	// LaunchNotices is where the provisioner notes the NodeClaims it created, so the cloud provider can wait
	// for their launches and merge them (nil: nothing is noted).
	LaunchNotices *cloudprovider.LaunchNotices
	// DeviceModels gives the DRA devices of instance types; nil when IGNORE_DRA_REQUESTS=true (pods with resource
	// claims are then not provisioned for).
	DeviceModels *devices.Source
}
