package metrics

import (
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
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

// Known reports whether instance types were recorded for the NodePool since the start.
func (o *OfferingPrices) Known(nodePool string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.last[nodePool]
	return ok
}

// Price is the hourly price of an offering among the instance types last returned for the NodePool (false when
// none of them has it).
func (o *OfferingPrices) Price(nodePool, instanceType, capacityType, zone string) (float64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range o.last[nodePool] {
		if it.Name != instanceType {
			continue
		}
		for _, off := range it.Offerings {
			if off.CapacityType == capacityType && off.Zone == zone {
				return off.Price, true
			}
		}
	}
	return 0, false
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

// InstanceTypeGauges is karpenter_cloudprovider_instance_type_cpu_cores, _memory_bytes and _offering_available:
// made at each scrape from the instance types OfferingPrices keeps (the ones the cloud provider last returned for
// each NodePool).
type InstanceTypeGauges struct {
	src                  *OfferingPrices
	cpu, memory, offered *prometheus.Desc
}

// NewInstanceTypeGauges returns the collector reading the instance types src keeps.
func NewInstanceTypeGauges(src *OfferingPrices) *InstanceTypeGauges {
	return &InstanceTypeGauges{
		src: src,
		cpu: prometheus.NewDesc("karpenter_cloudprovider_instance_type_cpu_cores",
			helpOf("karpenter_cloudprovider_instance_type_cpu_cores"), []string{LabelInstanceType}, nil),
		memory: prometheus.NewDesc("karpenter_cloudprovider_instance_type_memory_bytes",
			helpOf("karpenter_cloudprovider_instance_type_memory_bytes"), []string{LabelInstanceType}, nil),
		offered: prometheus.NewDesc("karpenter_cloudprovider_instance_type_offering_available",
			helpOf("karpenter_cloudprovider_instance_type_offering_available"),
			[]string{LabelInstanceType, LabelCapacityType, LabelZone}, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *InstanceTypeGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.cpu
	ch <- g.memory
	ch <- g.offered
}

// Collect implements prometheus.Collector. An instance type listed for several NodePools is reported once, as
// listed for the NodePool last in name order; an offering is available when it is available in any of them.
func (g *InstanceTypeGauges) Collect(ch chan<- prometheus.Metric) {
	type offKey struct{ instanceType, capacityType, zone string }
	cpu, memory := map[string]float64{}, map[string]float64{}
	available := map[offKey]bool{}
	g.src.mu.Lock()
	pools := make([]string, 0, len(g.src.last))
	for name := range g.src.last {
		pools = append(pools, name)
	}
	sort.Strings(pools)
	for _, name := range pools {
		for _, it := range g.src.last[name] {
			cpu[it.Name] = it.Capacity.Cpu().AsApproximateFloat64()
			memory[it.Name] = instanceTypeMemory(it)
			for _, off := range it.Offerings {
				k := offKey{it.Name, off.CapacityType, off.Zone}
				available[k] = available[k] || off.Available
			}
		}
	}
	g.src.mu.Unlock()
	for name, v := range cpu {
		ch <- prometheus.MustNewConstMetric(g.cpu, prometheus.GaugeValue, v, name)
		ch <- prometheus.MustNewConstMetric(g.memory, prometheus.GaugeValue, memory[name], name)
	}
	for k, ok := range available {
		v := 0.0
		if ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(g.offered, prometheus.GaugeValue, v, k.instanceType, k.capacityType, k.zone)
	}
}

// instanceTypeMemory is the memory the cloud sells with the type, in bytes: the instance-memory label (MiB) when
// the provider sets it, else the capacity the Node reports (which is after the VM's overhead).
func instanceTypeMemory(it *cloudprovider.InstanceType) float64 {
	if mib, err := strconv.ParseFloat(it.Labels[awsv1.LabelInstanceMemory], 64); err == nil {
		return mib * 1024 * 1024
	}
	return it.Capacity.Memory().AsApproximateFloat64()
}
