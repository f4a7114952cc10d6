package test

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// BenchmarkZones are the zones of the benchmark instance types.
var BenchmarkZones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// BenchmarkInstanceTypes returns a synthetic but realistic set of 384 instance types: categories c (2 GiB per
// vCPU), m (4 GiB) and r (8 GiB); generations 5, 6 and 7; amd64 and arm64 (arm 20% cheaper); plain and "d"
// (local NVMe, 10% dearer) variants; sizes large to 24xlarge plus 32xlarge for generation 7. Each has on-demand and
// spot offerings in three zones. Capacity follows the EC2 arithmetic: memory less 7.5% VM overhead, ENI-limited
// max pods, EKS kube-reserved and a 100Mi eviction threshold.
func BenchmarkInstanceTypes() []*cloudprovider.InstanceType {
	type size struct {
		name string
		vcpu int64
		pods int64
	}
	sizes := []size{{"large", 2, 29}, {"xlarge", 4, 58}, {"2xlarge", 8, 58}, {"4xlarge", 16, 234}, {"8xlarge", 32, 234},
		{"12xlarge", 48, 234}, {"16xlarge", 64, 737}, {"24xlarge", 96, 737}}
	cats := []struct {
		name  string
		gib   int64
		price float64 // on-demand USD per vCPU-hour, generation 5, amd64
	}{{"c", 2, 0.0425}, {"m", 4, 0.048}, {"r", 8, 0.063}}
	var out []*cloudprovider.InstanceType
	for _, cat := range cats {
		for gen := 5; gen <= 7; gen++ {
			for _, arch := range []string{"amd64", "arm64"} {
				for _, variant := range []string{"", "d"} {
					sz := sizes
					if gen == 7 {
						sz = append(append([]size(nil), sizes...), size{"32xlarge", 128, 737})
					}
					for _, s := range sz {
						family := fmt.Sprintf("%s%d", cat.name, gen)
						if arch == "arm64" {
							family += "g"
						}
						family += variant
						price := cat.price * float64(s.vcpu) * (1 - 0.02*float64(gen-5))
						if arch == "arm64" {
							price *= 0.8
						}
						if variant == "d" {
							price *= 1.1
						}
						out = append(out, benchType(family+"."+s.name, family, cat.name, gen, arch, s.name, s.vcpu, s.vcpu*cat.gib, s.pods, price))
					}
				}
			}
		}
	}
	return out
}

func benchType(name, family, category string, gen int, arch, size string, vcpu, gib, pods int64, price float64) *cloudprovider.InstanceType {
	memMiB := gib * 1024
	capMem := memMiB - memMiB*75/1000
	// EKS kube-reserved: cpu 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% beyond
	cpuMilli := int64(60)
	if vcpu >= 2 {
		cpuMilli += 10
	}
	if vcpu >= 3 {
		cpuMilli += 5 * (min(vcpu, 4) - 2)
	}
	if vcpu > 4 {
		cpuMilli += (vcpu - 4) * 25 / 10
	}
	it := &cloudprovider.InstanceType{
		Name: name,
		Labels: map[string]string{
			corev1.LabelArchStable: arch, corev1.LabelOSStable: "linux", corev1.LabelInstanceTypeStable: name,
			"karpenter.k8s.aws/instance-category": category, "karpenter.k8s.aws/instance-family": family,
			"karpenter.k8s.aws/instance-generation": fmt.Sprint(gen), "karpenter.k8s.aws/instance-size": size,
			"karpenter.k8s.aws/instance-cpu": fmt.Sprint(vcpu), "karpenter.k8s.aws/instance-memory": fmt.Sprint(memMiB),
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:              *resource.NewQuantity(vcpu, resource.DecimalSI),
			corev1.ResourceMemory:           *resource.NewQuantity(capMem<<20, resource.BinarySI),
			corev1.ResourcePods:             *resource.NewQuantity(pods, resource.DecimalSI),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
		},
		Overhead: cloudprovider.Overhead{
			KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity((11*pods+255)<<20, resource.BinarySI),
			},
			EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")},
		},
	}
	for i, z := range BenchmarkZones {
		it.Offerings = append(it.Offerings,
			cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: round4(price), Available: true},
			cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeSpot, Price: round4(price * (0.34 + 0.03*float64((i+gen)%3))), Available: true})
	}
	return it
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// DiversePods returns count pending pods in equal shares of five kinds, in the spirit of Karpenter's scheduling
// benchmark: generic pods, zone topology spread, hostname topology spread, zonal pod self-affinity and hostname
// pod anti-affinity, each requesting one of 100m..1500m cpu and 100Mi..4Gi memory. Labels and spread selectors use
// seven random values, so selectors also match pods of other kinds.
func DiversePods(count int, seed int64) []*corev1.Pod {
	r := rand.New(rand.NewSource(seed))
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	vals := []string{"a", "b", "c", "d", "e", "f", "g"}
	pick := func(xs []string) string { return xs[r.Intn(len(xs))] }
	per := count / 5
	var pods []*corev1.Pod
	add := func(kind string, n int, f func(b *SchedPodBuilder) *SchedPodBuilder) {
		for i := 0; i < n; i++ {
			b := SchedPod(fmt.Sprintf("%s-%d", kind, i)).Requests(pick(cpus), pick(mems))
			pods = append(pods, f(b).Obj())
		}
	}
	add("generic", per, func(b *SchedPodBuilder) *SchedPodBuilder { return b.Labels("my-label", pick(vals)) })
	add("zone-spread", per, func(b *SchedPodBuilder) *SchedPodBuilder {
		return b.Labels("my-label", pick(vals)).ZoneSpread(1, "my-label", pick(vals))
	})
	add("host-spread", per, func(b *SchedPodBuilder) *SchedPodBuilder {
		return b.Labels("my-label", pick(vals)).HostnameSpread(1, "my-label", pick(vals))
	})
	add("zone-affinity", per, func(b *SchedPodBuilder) *SchedPodBuilder {
		v := pick(vals)
		return b.Labels("my-affinity", v).PodAffinity(corev1.LabelTopologyZone, "my-affinity", v)
	})
	add("host-anti", per, func(b *SchedPodBuilder) *SchedPodBuilder {
		return b.Labels("app", "nginx").PodAntiAffinity(corev1.LabelHostname, "app", "nginx")
	})
	add("generic-rest", count-len(pods), func(b *SchedPodBuilder) *SchedPodBuilder { return b.Labels("my-label", pick(vals)) })
	return pods
}
