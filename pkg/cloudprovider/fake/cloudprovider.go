package fake

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// ProviderIDPrefix starts every provider ID the fake hands out: fake:///<zone>/i-<n>.
const ProviderIDPrefix = "fake:///"

// ImageID is the image every fake instance reports.
const ImageID = "fake-image-1"

// CloudProvider is an in-memory cloudprovider.CloudProvider. Configure it through its methods; it is safe for
// concurrent use.
type CloudProvider struct {
	mu            sync.Mutex
	clock         clock.Clock
	instanceTypes []*cloudprovider.InstanceType
	unavailable   map[string]bool
	instances     map[string]*karpv1.NodeClaim
	created       []*karpv1.NodeClaim
	deleted       []string
	nextID        int
	errs          map[string][]error
	drift         cloudprovider.DriftReason
	repair        []cloudprovider.RepairPolicy
	rebooted      []string
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// New returns a fake with DefaultInstanceTypes; c stamps instance creation times.
func New(c clock.Clock) *CloudProvider {
	return &CloudProvider{
		clock:         c,
		instanceTypes: DefaultInstanceTypes(),
		unavailable:   map[string]bool{},
		instances:     map[string]*karpv1.NodeClaim{},
		errs:          map[string][]error{},
	}
}

// SetInstanceTypes replaces the instance types offered to every NodePool.
func (f *CloudProvider) SetInstanceTypes(its []*cloudprovider.InstanceType) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instanceTypes = its
}

// SetUnavailable marks an offering as out of capacity (true) or back (false): Create fails with an
// InsufficientCapacityError when every allowed offering is out.
func (f *CloudProvider) SetUnavailable(instanceType, zone, capacityType string, unavailable bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailable[offeringKey(instanceType, zone, capacityType)] = unavailable
}

// InjectError makes the next call of method ("Create", "Delete", "Get", "List", "GetInstanceTypes",
// "IsDrifted") return err. Several injections queue up in order.
func (f *CloudProvider) InjectError(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[method] = append(f.errs[method], err)
}

// SetDrift makes IsDrifted return reason for every NodeClaim.
func (f *CloudProvider) SetDrift(reason cloudprovider.DriftReason) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drift = reason
}

// Created returns copies of the NodeClaims returned by successful Create calls, in order.
func (f *CloudProvider) Created() []*karpv1.NodeClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*karpv1.NodeClaim, len(f.created))
	for i, nc := range f.created {
		out[i] = nc.DeepCopy()
	}
	return out
}

// Deleted returns the provider IDs of instances terminated by Delete, in order.
func (f *CloudProvider) Deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deleted...)
}

var _ cloudprovider.Rebooter = (*CloudProvider)(nil)

// Reboot records a reboot of the NodeClaim's instance (an error queued with SetErr("Reboot", ...) first); an
// instance the fake does not know is a NotFoundError.
func (f *CloudProvider) Reboot(_ context.Context, nc *karpv1.NodeClaim) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("Reboot"); err != nil {
		return err
	}
	if _, ok := f.instances[nc.Status.ProviderID]; !ok {
		return cloudprovider.NewNotFoundError(fmt.Errorf("instance %q", nc.Status.ProviderID))
	}
	f.rebooted = append(f.rebooted, nc.Status.ProviderID)
	return nil
}

// Rebooted returns the provider IDs of the reboots made, in order.
func (f *CloudProvider) Rebooted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.rebooted...)
}

// AddInstance adds a live instance, e.g. one leaked without a NodeClaim, and returns its provider ID.
func (f *CloudProvider) AddInstance(nc *karpv1.NodeClaim) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	nc = nc.DeepCopy()
	if nc.Status.ProviderID == "" {
		nc.Status.ProviderID = f.newProviderIDLocked(Zones[0])
	}
	if nc.CreationTimestamp.IsZero() {
		nc.CreationTimestamp = metav1.NewTime(f.clock.Now())
	}
	f.instances[nc.Status.ProviderID] = nc
	return nc.Status.ProviderID
}

// SetTerminating marks an instance as being terminated by the cloud (EC2's shutting-down): List and Get report
// it with a DeletionTimestamp.
func (f *CloudProvider) SetTerminating(providerID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if nc, ok := f.instances[providerID]; ok {
		now := metav1.NewTime(f.clock.Now())
		nc.DeletionTimestamp = &now
	}
}

// RemoveInstance makes an instance disappear as if terminated outside Dovetail.
func (f *CloudProvider) RemoveInstance(providerID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.instances, providerID)
}

func (f *CloudProvider) popErr(method string) error {
	if q := f.errs[method]; len(q) > 0 {
		f.errs[method] = q[1:]
		return q[0]
	}
	return nil
}

func (f *CloudProvider) newProviderIDLocked(zone string) string {
	f.nextID++
	return fmt.Sprintf("%s%s/i-%017d", ProviderIDPrefix, zone, f.nextID)
}

type candidate struct {
	it       *cloudprovider.InstanceType
	offering cloudprovider.Offering
}

// Create launches the cheapest available offering allowed by the NodeClaim's requirements whose allocatable
// covers its resource requests.
func (f *CloudProvider) Create(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("Create"); err != nil {
		return nil, err
	}
	reqs := f.cloudRequirementsLocked(nc)
	var compatible, available []candidate
	for _, it := range f.instanceTypes {
		if !fits(it.Allocatable(), nc.Spec.Resources.Requests) {
			continue
		}
		for _, o := range it.Offerings {
			if !requirements.Matches(reqs, offeringLabels(it, o), nil) {
				continue
			}
			compatible = append(compatible, candidate{it, o})
			if o.Available && !f.unavailable[offeringKey(it.Name, o.Zone, o.CapacityType)] {
				available = append(available, candidate{it, o})
			}
		}
	}
	if len(compatible) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(
			fmt.Errorf("no instance type offering satisfies the requirements and requests of nodeclaim %s", nc.Name))
	}
	if len(available) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(
			fmt.Errorf("all %d offerings allowed for nodeclaim %s are out of capacity", len(compatible), nc.Name))
	}
	sort.SliceStable(available, func(i, j int) bool {
		if available[i].offering.Price != available[j].offering.Price {
			return available[i].offering.Price < available[j].offering.Price
		}
		return available[i].it.Name < available[j].it.Name
	})
	pick := available[0]
	out := nc.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range offeringLabels(pick.it, pick.offering) {
		out.Labels[k] = v
	}
	out.Status.ProviderID = f.newProviderIDLocked(pick.offering.Zone)
	out.Status.ImageID = ImageID
	out.Status.Capacity = pick.it.Capacity.DeepCopy()
	out.Status.Allocatable = pick.it.Allocatable()
	out.CreationTimestamp = metav1.NewTime(f.clock.Now())
	f.instances[out.Status.ProviderID] = out.DeepCopy()
	f.created = append(f.created, out.DeepCopy())
	return out, nil
}

// cloudRequirementsLocked keeps the requirements on keys the cloud knows (instance type labels, zone, capacity
// type); others, such as karpenter.sh/nodepool or custom template labels, become node labels and do not
// constrain the launch.
func (f *CloudProvider) cloudRequirementsLocked(nc *karpv1.NodeClaim) []corev1.NodeSelectorRequirement {
	known := map[string]bool{corev1.LabelTopologyZone: true, karpv1.CapacityTypeLabelKey: true}
	for _, it := range f.instanceTypes {
		for k := range it.Labels {
			known[k] = true
		}
	}
	var out []corev1.NodeSelectorRequirement
	for _, r := range karpv1.NodeSelectorRequirements(nc.Spec.Requirements) {
		if known[r.Key] {
			out = append(out, r)
		}
	}
	return out
}

// Delete terminates the instance; it returns a NotFoundError when there is none.
func (f *CloudProvider) Delete(ctx context.Context, nc *karpv1.NodeClaim) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("Delete"); err != nil {
		return err
	}
	id := nc.Status.ProviderID
	if _, ok := f.instances[id]; !ok || id == "" {
		return cloudprovider.NewNotFoundError(fmt.Errorf("instance %q", id))
	}
	delete(f.instances, id)
	f.deleted = append(f.deleted, id)
	return nil
}

// Get returns the instance or a NotFoundError.
func (f *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("Get"); err != nil {
		return nil, err
	}
	nc, ok := f.instances[providerID]
	if !ok {
		return nil, cloudprovider.NewNotFoundError(fmt.Errorf("instance %q", providerID))
	}
	return nc.DeepCopy(), nil
}

// List returns every live instance, ordered by provider ID.
func (f *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("List"); err != nil {
		return nil, err
	}
	out := make([]*karpv1.NodeClaim, 0, len(f.instances))
	for _, nc := range f.instances {
		out = append(out, nc.DeepCopy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.ProviderID < out[j].Status.ProviderID })
	return out, nil
}

// GetInstanceTypes returns the configured instance types with offerings marked unavailable as configured.
func (f *CloudProvider) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("GetInstanceTypes"); err != nil {
		return nil, err
	}
	out := make([]*cloudprovider.InstanceType, 0, len(f.instanceTypes))
	for _, it := range f.instanceTypes {
		cp := *it
		cp.Offerings = append([]cloudprovider.Offering(nil), it.Offerings...)
		for i, o := range cp.Offerings {
			if f.unavailable[offeringKey(it.Name, o.Zone, o.CapacityType)] {
				cp.Offerings[i].Available = false
			}
		}
		out = append(out, &cp)
	}
	return out, nil
}

// IsDrifted returns the reason set with SetDrift.
func (f *CloudProvider) IsDrifted(ctx context.Context, nc *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.popErr("IsDrifted"); err != nil {
		return "", err
	}
	return f.drift, nil
}

// Name returns "fake".
func (f *CloudProvider) Name() string { return "fake" }

// RepairPolicies returns the policies set with SetRepairPolicies, by default DefaultRepairPolicies.
func (f *CloudProvider) RepairPolicies() []cloudprovider.RepairPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.repair == nil {
		return DefaultRepairPolicies()
	}
	return append([]cloudprovider.RepairPolicy(nil), f.repair...)
}

// SetRepairPolicies replaces the fake's repair policies (an empty, non-nil list turns repair off).
func (f *CloudProvider) SetRepairPolicies(p []cloudprovider.RepairPolicy) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.repair = append([]cloudprovider.RepairPolicy{}, p...)
}

// DefaultRepairPolicies are the fake's repair policies: the kubelet's Ready condition False or Unknown for 30
// minutes, and a test condition, FakeHardwareReady, False for 10 minutes.
func DefaultRepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "FakeHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
	}
}

// ZoneFromProviderID returns the zone part of a fake provider ID.
func ZoneFromProviderID(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, ProviderIDPrefix)
	if !ok {
		return "", errors.New("not a fake provider ID: " + id)
	}
	zone, _, ok := strings.Cut(rest, "/")
	if !ok {
		return "", errors.New("malformed fake provider ID: " + id)
	}
	return zone, nil
}

func offeringLabels(it *cloudprovider.InstanceType, o cloudprovider.Offering) map[string]string {
	out := make(map[string]string, len(it.Labels)+2)
	for k, v := range it.Labels {
		out[k] = v
	}
	out[corev1.LabelTopologyZone] = o.Zone
	out[karpv1.CapacityTypeLabelKey] = o.CapacityType
	return out
}

func fits(allocatable, requests corev1.ResourceList) bool {
	for name, q := range requests {
		a, ok := allocatable[name]
		if !ok {
			if q.IsZero() {
				continue
			}
			return false
		}
		if a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}
