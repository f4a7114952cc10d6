package instance

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// MaxInstanceTypes is how many instance types (the cheapest) one CreateFleet call may choose among.
const MaxInstanceTypes = 60

// Choice is one launchable (instance type, zone, capacity type) offering with the subnet to launch it in.
type Choice struct {
	InstanceType  string
	Zone          string
	ZoneID        string
	SubnetID      string
	CapacityType  string
	Price         float64
	ReservationID string
	// ReservationType is default or capacity-block for a reserved choice.
	ReservationType string
	Interruptible   bool
}

// SelectInput is what SelectOverrides chooses from.
type SelectInput struct {
	// Requirements are the NodeClaim's requirements.
	Requirements []corev1.NodeSelectorRequirement
	// InstanceTypes are the node class's instance types with their offerings (availability already applied).
	InstanceTypes []*cloudprovider.InstanceType
	// Subnets are the node class's resolved subnets, in preference order.
	Subnets []awsv1.Subnet
	// SubnetUsable reports whether a subnet may be launched into now; nil means all are.
	SubnetUsable func(id string) bool
	// Max bounds the number of instance types; zero means MaxInstanceTypes.
	Max int
	// MinValues maps a label key to the number of distinct values the kept instance types must still offer
	// (the requirements' minValues); truncation to Max keeps the cheapest types that satisfy them.
	MinValues map[string]int
}

// capacityTypePreference is the order capacity types are tried in: reserved capacity is already paid for, spot
// is cheaper than on-demand.
var capacityTypePreference = []string{cloudprovider.CapacityTypeReserved, cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeOnDemand}

// offeringKeys are the labels that vary per offering rather than per instance type.
var offeringKeys = map[string]bool{
	corev1.LabelTopologyZone:                    true,
	awsv1.LabelTopologyZoneID:                   true,
	karpv1.CapacityTypeLabelKey:                 true,
	awsv1.LabelCapacityReservationID:            true,
	awsv1.LabelCapacityReservationType:          true,
	awsv1.LabelCapacityReservationInterruptible: true,
}

// instanceKeys are the well-known labels an instance type is judged on; requirements on other keys (NodePool
// labels, karpenter.sh/nodepool, region) say nothing about the instance type.
var instanceKeys = func() map[string]bool {
	out := map[string]bool{}
	for k := range awsv1.WellKnownLabels() {
		out[k] = true
	}
	for _, k := range []string{karpv1.NodePoolLabelKey, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion,
		corev1.LabelFailureDomainBetaZone, corev1.LabelWindowsBuild, awsv1.LabelCapacityReservationID,
		awsv1.LabelCapacityReservationType, awsv1.LabelCapacityReservationInterruptible,
		// Chosen at launch (Placement.Tenancy, Placement.PartitionNumber), not properties of the type.
		awsv1.LabelInstanceTenancy, awsv1.LabelPlacementGroupPartition} {
		delete(out, k)
	}
	for k := range offeringKeys {
		delete(out, k)
	}
	return out
}()

// IsInstanceTypeKey reports whether a requirement on key is judged against instance type labels.
func IsInstanceTypeKey(key string) bool { return instanceKeys[key] }

// CompatibleInstanceTypes returns the instance types whose labels satisfy the requirements.
func CompatibleInstanceTypes(reqs []corev1.NodeSelectorRequirement, its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range its {
		if requirements.Matches(reqs, it.Labels, IsInstanceTypeKey) {
			out = append(out, it)
		}
	}
	return out
}

// SelectOverrides picks the capacity type and the offerings to put in a CreateFleet request: among the available
// offerings that satisfy the requirements and have a usable subnet in their zone, the most preferred capacity type
// (reserved, then spot, then on-demand) and, within it, the Max cheapest instance types with every zone they are
// offered in, cheapest first. It returns an error naming why nothing qualifies.
func SelectOverrides(in SelectInput) (string, []Choice, error) {
	max := in.Max
	if max <= 0 {
		max = MaxInstanceTypes
	}
	subnetByZone := map[string]awsv1.Subnet{}
	for _, s := range in.Subnets {
		if _, ok := subnetByZone[s.Zone]; ok {
			continue
		}
		if in.SubnetUsable != nil && !in.SubnetUsable(s.ID) {
			continue
		}
		subnetByZone[s.Zone] = s
	}
	if len(subnetByZone) == 0 {
		return "", nil, fmt.Errorf("no usable subnet among %d resolved subnets", len(in.Subnets))
	}
	compatible := CompatibleInstanceTypes(in.Requirements, in.InstanceTypes)
	if len(compatible) == 0 {
		return "", nil, fmt.Errorf("no instance type among %d satisfies the requirements", len(in.InstanceTypes))
	}
	byCapacityType := map[string][]Choice{}
	for _, it := range compatible {
		for _, o := range it.Offerings {
			if !o.Available {
				continue
			}
			s, ok := subnetByZone[o.Zone]
			if !ok {
				continue
			}
			labels := map[string]string{
				corev1.LabelTopologyZone:    o.Zone,
				awsv1.LabelTopologyZoneID:   s.ZoneID,
				karpv1.CapacityTypeLabelKey: o.CapacityType,
			}
			for k, v := range OfferingReservationLabels(o) {
				labels[k] = v
			}
			if !requirements.Matches(in.Requirements, labels, func(k string) bool { return offeringKeys[k] }) {
				continue
			}
			byCapacityType[o.CapacityType] = append(byCapacityType[o.CapacityType], Choice{
				InstanceType: it.Name, Zone: o.Zone, ZoneID: s.ZoneID, SubnetID: s.ID,
				CapacityType: o.CapacityType, Price: o.Price, ReservationID: o.ReservationID,
				ReservationType: o.ReservationType, Interruptible: o.Interruptible,
			})
		}
	}
	for _, ct := range capacityTypePreference {
		if choices := byCapacityType[ct]; len(choices) > 0 {
			return ct, cheapest(choices, max, in.MinValues, labelsByType(compatible)), nil
		}
	}
	return "", nil, fmt.Errorf("no available offering of %d compatible instance types matches the zone and capacity-type requirements", len(compatible))
}

func labelsByType(its []*cloudprovider.InstanceType) map[string]map[string]string {
	out := make(map[string]map[string]string, len(its))
	for _, it := range its {
		out[it.Name] = it.Labels
	}
	return out
}

// cheapest keeps the choices of the max instance types with the lowest price, sorted by price. Types needed to
// keep minValues distinct values of a key are kept first (the cheapest type of each new value), so truncation
// never breaks a minValues requirement the full set met.
func cheapest(choices []Choice, max int, minValues map[string]int, labels map[string]map[string]string) []Choice {
	minPrice := map[string]float64{}
	for _, c := range choices {
		if p, ok := minPrice[c.InstanceType]; !ok || c.Price < p {
			minPrice[c.InstanceType] = c.Price
		}
	}
	types := make([]string, 0, len(minPrice))
	for t := range minPrice {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if minPrice[types[i]] != minPrice[types[j]] {
			return minPrice[types[i]] < minPrice[types[j]]
		}
		return types[i] < types[j]
	})
	keep := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(minValues)) {
		seen := map[string]bool{}
		for _, t := range types {
			if keep[t] {
				if v, ok := labels[t][key]; ok {
					seen[v] = true
				}
			}
		}
		for _, t := range types {
			if len(seen) >= minValues[key] {
				break
			}
			if v, ok := labels[t][key]; ok && !seen[v] {
				seen[v] = true
				keep[t] = true
			}
		}
	}
	for _, t := range types {
		if len(keep) >= max {
			break
		}
		keep[t] = true
	}
	var out []Choice
	for _, c := range choices {
		if keep[c.InstanceType] {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Price != b.Price {
			return a.Price < b.Price
		}
		if a.InstanceType != b.InstanceType {
			return a.InstanceType < b.InstanceType
		}
		return a.Zone < b.Zone
	})
	return out
}

// OfferingReservationLabels are the capacity reservation labels of a reserved offering (none for others):
// karpenter.k8s.aws/capacity-reservation-id, -type and -interruptible.
func OfferingReservationLabels(o cloudprovider.Offering) map[string]string {
	if o.ReservationID == "" {
		return nil
	}
	return ReservationLabels(o.ReservationID, o.ReservationType, o.Interruptible)
}

// ReservationLabels are the labels of a node in a capacity reservation.
func ReservationLabels(id, reservationType string, interruptible bool) map[string]string {
	if reservationType == "" {
		reservationType = string(awsv1.CapacityReservationTypeDefault)
	}
	return map[string]string{
		awsv1.LabelCapacityReservationID:            id,
		awsv1.LabelCapacityReservationType:          reservationType,
		awsv1.LabelCapacityReservationInterruptible: strconv.FormatBool(interruptible),
	}
}
