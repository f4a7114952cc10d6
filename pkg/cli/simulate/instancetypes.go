package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype/fromcatalog"
)

// fileInstanceType is one entry of an --instance-types file.
type fileInstanceType struct {
	Name      string              `json:"name"`
	Capacity  map[string]string   `json:"capacity"`
	Overhead  map[string]string   `json:"overhead,omitempty"`
	Labels    map[string]string   `json:"labels,omitempty"`
	Offerings []fileInstanceOffer `json:"offerings"`
}

type fileInstanceOffer struct {
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        *float64 `json:"price"`
	Available    *bool    `json:"available,omitempty"`
}

// readInstanceTypes parses an --instance-types file (a JSON array); a missing overhead means none and a missing
// "available" means available.
func readInstanceTypes(path string) ([]*cloudprovider.InstanceType, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in []fileInstanceType
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of instance types: %w", path, err)
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("%s: no instance types", path)
	}
	seen := map[string]bool{}
	out := make([]*cloudprovider.InstanceType, 0, len(in))
	for i, t := range in {
		where := fmt.Sprintf("%s: [%d]", path, i)
		if t.Name != "" {
			where += " (" + t.Name + ")"
		}
		it, err := convertInstanceType(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if seen[it.Name] {
			return nil, fmt.Errorf("%s: name: duplicate instance type %q", where, it.Name)
		}
		seen[it.Name] = true
		out = append(out, it)
	}
	return out, nil
}

func convertInstanceType(t fileInstanceType) (*cloudprovider.InstanceType, error) {
	if t.Name == "" {
		return nil, fmt.Errorf("name: required")
	}
	capacity, err := resourceList("capacity", t.Capacity)
	if err != nil {
		return nil, err
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := capacity[r]; !ok {
			return nil, fmt.Errorf("capacity.%s: required", r)
		}
	}
	if _, ok := capacity[corev1.ResourcePods]; !ok {
		capacity[corev1.ResourcePods] = resource.MustParse("110")
	}
	overhead, err := resourceList("overhead", t.Overhead)
	if err != nil {
		return nil, err
	}
	it := &cloudprovider.InstanceType{Name: t.Name, Capacity: capacity, Labels: map[string]string{},
		Overhead: cloudprovider.Overhead{KubeReserved: overhead}}
	for k, v := range t.Labels {
		it.Labels[k] = v
	}
	it.Labels[corev1.LabelInstanceTypeStable] = t.Name
	if len(t.Offerings) == 0 {
		return nil, fmt.Errorf("offerings: at least one offering is required")
	}
	for j, o := range t.Offerings {
		switch {
		case o.Zone == "":
			return nil, fmt.Errorf("offerings[%d].zone: required", j)
		case o.CapacityType != cloudprovider.CapacityTypeOnDemand && o.CapacityType != cloudprovider.CapacityTypeSpot && o.CapacityType != cloudprovider.CapacityTypeReserved:
			return nil, fmt.Errorf("offerings[%d].capacityType: %q is not one of on-demand, spot, reserved", j, o.CapacityType)
		case o.Price == nil:
			return nil, fmt.Errorf("offerings[%d].price: required", j)
		case *o.Price < 0:
			return nil, fmt.Errorf("offerings[%d].price: must not be negative", j)
		}
		avail := o.Available == nil || *o.Available
		it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: *o.Price, Available: avail})
	}
	return it, nil
}

func resourceList(field string, in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q, err := resource.ParseQuantity(in[k])
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %q is not a quantity", field, k, in[k])
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// catalogInstanceTypes computes the instance types of the built-in catalog in region with the EC2NodeClass's
// kubelet settings, using the controller's capacity arithmetic (VM memory overhead 7.5%, ENI-limited max pods,
// EKS kube-reserved, eviction thresholds), with on-demand and spot offerings per zone.
func catalogInstanceTypes(cat *catalog.Catalog, region string, nc *awsv1.EC2NodeClass) ([]*cloudprovider.InstanceType, error) {
	if _, ok := cat.Region(region); !ok {
		return nil, fmt.Errorf("region %q is not in the built-in catalog", region)
	}
	var kubelet instancetype.Kubelet
	if nc != nil {
		kubelet = instancetype.KubeletOf(nc.Spec.Kubelet, nil)
	}
	settings := instancetype.Settings{VMMemoryOverheadPercent: 0.075}
	// As the controller's: the launch chooses the tenancy (a placement group's partitions need the group, which
	// the catalog does not know).
	launch := map[string][]string{awsv1.LabelInstanceTenancy: instancetype.TenancyValues()}
	var out []*cloudprovider.InstanceType
	for _, t := range cat.TypesIn(region) {
		shape, err := instancetype.Compute(fromcatalog.Info(t), kubelet, settings)
		if err != nil {
			if nc != nil {
				return nil, fmt.Errorf("EC2NodeClass %s: instance type %s: %w", nc.Name, t.Name, err)
			}
			continue // a catalog entry the arithmetic cannot handle (no vCPU or memory figures)
		}
		it := &cloudprovider.InstanceType{Name: t.Name, Labels: shape.Labels, Capacity: shape.Capacity, Overhead: shape.Overhead,
			LaunchLabels: launch}
		ro := t.Offerings[region]
		for _, z := range ro.Zones {
			if ro.OnDemandUSD > 0 {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: ro.OnDemandUSD, Available: true})
			}
			if p, ok := ro.SpotUSD[z]; ok {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeSpot, Price: p, Available: true})
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	return withReserved(out, nc), nil
}

// withReserved adds the reserved offerings of the node class's resolved capacity reservations
// (status.capacityReservations), priced as the controller prices them. Their room is not in the status, so
// each is taken as available; the controller falls back to on-demand or spot when a reservation is full.
func withReserved(its []*cloudprovider.InstanceType, nc *awsv1.EC2NodeClass) []*cloudprovider.InstanceType {
	if nc == nil || len(nc.Status.CapacityReservations) == 0 {
		return its
	}
	onDemand, zones := map[string]float64{}, map[string]bool{}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				onDemand[it.Name] = o.Price
				zones[o.Zone] = true
			}
		}
	}
	if len(nc.Status.Subnets) > 0 {
		zones = map[string]bool{}
		for _, s := range nc.Status.Subnets {
			zones[s.Zone] = true
		}
	}
	reserved := capacityreservation.Offerings(capacityreservation.OfferingsInput{Reservations: nc.Status.CapacityReservations,
		OnDemand: onDemand, Available: func(string) int { return 1 }, Zones: zones})
	for _, it := range its {
		it.Offerings = append(it.Offerings, reserved[it.Name]...)
	}
	return its
}
