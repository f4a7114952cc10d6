package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// OfferingPrices is karpenter_cloudprovider_instance_type_offering_price_estimate. It keeps the instance types
// the cloud provider last returned for each NodePool (the provider's own cached objects, not copies) and makes
// the series when Prometheus scrapes: a gauge vector held a series object and label pairs for each of the
// catalog's thousands of offerings (5 MB, an eighth of the controller's live heap at 1,000 nodes), and updated
// all of them on every provisioning pass.
type OfferingPrices struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// last holds, by NodePool name, the instance types last returned for it.
	last map[string][]*cloudprovider.InstanceType
}

// NewOfferingPrices returns the collector, empty.
func NewOfferingPrices() *OfferingPrices {
	return &OfferingPrices{
		desc: prometheus.NewDesc("karpenter_cloudprovider_instance_type_offering_price_estimate",
			"Estimated hourly price in US dollars of an offering, by instance type, capacity type and zone.",
			[]string{LabelInstanceType, LabelCapacityType, LabelZone}, nil),
		last: map[string][]*cloudprovider.InstanceType{},
	}
}

// Record keeps the instance types just returned for the NodePool, replacing the ones before.
func (o *OfferingPrices) Record(nodePool string, its []*cloudprovider.InstanceType) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last[nodePool] = its
}

// Describe implements prometheus.Collector.
func (o *OfferingPrices) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

// Collect implements prometheus.Collector: one series an offering. An offering listed for several NodePools is
// reported once, with the price of the NodePool last in name order (prices differ between NodePools only where
// a NodeOverlay adjusts them).
func (o *OfferingPrices) Collect(ch chan<- prometheus.Metric) {
	type key struct{ instanceType, capacityType, zone string }
	prices := map[key]float64{}
	o.mu.Lock()
	pools := make([]string, 0, len(o.last))
	for name := range o.last {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	for _, name := range pools {
		for _, it := range o.last[name] {
			for _, off := range it.Offerings {
				prices[key{it.Name, off.CapacityType, off.Zone}] = off.Price
			}
		}
	}
	o.mu.Unlock()
	for k, price := range prices {
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, price, k.instanceType, k.capacityType, k.zone)
	}
}
