package scheduletest

import (
	"fmt"
	"math/rand"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// zonesAll are the zones random snapshots draw from.
var zonesAll = []string{"z1", "z2", "z3"}

func pickN[T any](r *rand.Rand, xs []T, n int) []T {
	idx := r.Perm(len(xs))[:n]
	out := make([]T, 0, n)
	for _, i := range idx {
		out = append(out, xs[i])
	}
	return out
}

// RandomSnapshot returns a random snapshot drawn from r: two or three zones, up to eight instance types with
// spot, on-demand and reserved offerings (some unavailable), one or two NodePools with random requirements,
// taints, startup taints, limits and minValues, DaemonSets, a zonal WaitForFirstConsumer StorageClass, existing
// nodes and in-flight NodeClaims with running pods, and up to five deployments of pending pods mixing node
// selectors and affinity, tolerations, topology spread, pod (anti-)affinity, host ports, init and sidecar
// containers, pod overhead, GPUs and volumes. The same r state always gives the same snapshot.
func RandomSnapshot(r *rand.Rand) *scheduling.Snapshot {
	zones := zonesAll[:2+r.Intn(2)]
	snap := &scheduling.Snapshot{InstanceTypes: map[string][]*cloudprovider.InstanceType{}}
	// instance types
	var its []*cloudprovider.InstanceType
	for i := 0; i < 3+r.Intn(6); i++ {
		cpu := []int{1, 2, 4, 8, 16}[r.Intn(5)]
		gib := cpu * []int{2, 4, 8}[r.Intn(3)]
		arch := []string{"amd64", "arm64"}[r.Intn(2)]
		b := test.SchedInstanceType(fmt.Sprintf("t%d.%dx", i, cpu), strconv.Itoa(cpu), fmt.Sprintf("%dGi", gib)).
			Label(corev1.LabelArchStable, arch).Label("example.com/family", fmt.Sprintf("f%d", i%3)).
			Capacity(corev1.ResourcePods, strconv.Itoa([]int{4, 8, 29, 110}[r.Intn(4)]))
		if r.Intn(3) == 0 {
			b.Overhead("100m", "256Mi")
		}
		if r.Intn(8) == 0 {
			b.Capacity("nvidia.com/gpu", strconv.Itoa(1+r.Intn(4)))
		}
		price := float64(cpu) * 0.04 * (0.8 + 0.4*r.Float64())
		for _, z := range zones {
			if r.Intn(5) == 0 {
				continue
			}
			if r.Intn(10) == 0 {
				b.Unavailable(z, "on-demand", price)
			} else {
				b.Offering(z, "on-demand", round(price))
			}
			if r.Intn(2) == 0 {
				b.Offering(z, "spot", round(price*0.4))
			}
			if r.Intn(15) == 0 {
				b.Offering(z, "reserved", round(price*0.2))
			}
		}
		its = append(its, b.Obj())
	}
	// node pools
	for p := 0; p < 1+r.Intn(2); p++ {
		name := fmt.Sprintf("pool%d", p)
		np := test.SchedNodePool(name).Weight(int32(r.Intn(3) * 10))
		if r.Intn(2) == 0 {
			np.Requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, pickN(r, []string{"spot", "on-demand", "reserved"}, 1+r.Intn(3))...)
		}
		if r.Intn(3) == 0 {
			np.Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, []string{"amd64", "arm64"}[r.Intn(2)])
		}
		if r.Intn(3) == 0 {
			np.Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, pickN(r, zones, 1+r.Intn(len(zones)))...)
		}
		if r.Intn(4) == 0 {
			np.Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpExists).MinValues(1 + r.Intn(2))
		}
		if r.Intn(3) == 0 {
			np.Label("team", []string{"a", "b"}[p%2])
		}
		if r.Intn(6) == 0 {
			np.Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
		}
		if r.Intn(4) == 0 {
			np.StartupTaint("example.com/agent-not-ready", "", corev1.TaintEffectNoSchedule)
		}
		if r.Intn(5) == 0 {
			np.Limit(corev1.ResourceCPU, strconv.Itoa(4+r.Intn(30)))
		}
		if r.Intn(8) == 0 {
			np.Limit(scheduling.ResourceNodes, strconv.Itoa(1+r.Intn(4)))
		}
		snap.NodePools = append(snap.NodePools, np.Obj())
		snap.InstanceTypes[name] = pickN(r, its, 1+r.Intn(len(its)))
	}
	// daemonsets
	for d := 0; d < r.Intn(3); d++ {
		ds := test.SchedPod(fmt.Sprintf("ds%d", d)).Requests(fmt.Sprintf("%dm", 50+r.Intn(200)), fmt.Sprintf("%dMi", 64+r.Intn(256)))
		if r.Intn(2) == 0 {
			ds.Toleration("", "", "")
		}
		if r.Intn(3) == 0 {
			ds.NodeSelector(corev1.LabelArchStable, "amd64")
		}
		pod := ds.Obj()
		snap.DaemonSets = append(snap.DaemonSets, test.SchedDaemonSet(pod))
	}
	// storage
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	snap.StorageClasses = append(snap.StorageClasses, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal"},
		Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &wffc,
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: zones[:2]}}}}})
	// existing nodes
	apps := []string{"web", "api", "db", "cache", "batch", "ml"}
	for e := 0; e < r.Intn(4); e++ {
		cpu := []int{2, 4, 8}[r.Intn(3)]
		n := test.SchedNode(fmt.Sprintf("node-%d", e), strconv.Itoa(cpu), fmt.Sprintf("%dGi", cpu*4)).Zone(zones[r.Intn(len(zones))]).
			Label(corev1.LabelArchStable, []string{"amd64", "arm64"}[r.Intn(2)])
		if r.Intn(4) == 0 {
			n.Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
		}
		if r.Intn(5) == 0 {
			n.VolumeLimit("ebs.csi.aws.com", 1)
		}
		var pods []*corev1.Pod
		for k := 0; k < r.Intn(4); k++ {
			pb := test.SchedPod(fmt.Sprintf("running-%d-%d", e, k)).Requests(fmt.Sprintf("%dm", 100+r.Intn(900)), "512Mi").Labels("app", apps[r.Intn(len(apps))])
			if r.Intn(4) == 0 {
				pb.PodAntiAffinity(corev1.LabelHostname, "app", apps[r.Intn(len(apps))])
			}
			if r.Intn(5) == 0 {
				pb.HostPort(8080)
			}
			pods = append(pods, pb.Obj())
		}
		if r.Intn(3) == 0 {
			n.InFlight(snap.NodePools[0].Name)
			n.Label(corev1.LabelHostname, fmt.Sprintf("node-%d", e))
		}
		snap.Nodes = append(snap.Nodes, n.Pods(pods...).Obj())
	}
	// pending pods in deployments
	for d := 0; d < 1+r.Intn(5); d++ {
		app := apps[d]
		replicas := 1 + r.Intn(8)
		cpu := []string{"100m", "250m", "500m", "1", "1500m", "3", "6"}[r.Intn(7)]
		mem := []string{"128Mi", "512Mi", "1Gi", "4Gi", "12Gi"}[r.Intn(5)]
		if r.Intn(20) == 0 {
			cpu = "64" // larger than any instance type: must come back unschedulable with a reason
		}
		other := apps[r.Intn(len(apps))]
		var opts []func(b *test.SchedPodBuilder)
		for k := 0; k < r.Intn(4); k++ {
			switch r.Intn(17) {
			case 0:
				z := zones[r.Intn(len(zones))]
				opts = append(opts, func(b *test.SchedPodBuilder) { b.Zone(z) })
			case 1:
				a := []string{"amd64", "arm64"}[r.Intn(2)]
				opts = append(opts, func(b *test.SchedPodBuilder) { b.NodeSelector(corev1.LabelArchStable, a) })
			case 2:
				z1, z2 := zones[0], zones[len(zones)-1]
				opts = append(opts, func(b *test.SchedPodBuilder) {
					b.RequiredNodeTerm(test.NodeRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z1)).
						RequiredNodeTerm(test.NodeRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z2))
				})
			case 3:
				z := zones[r.Intn(len(zones))]
				opts = append(opts, func(b *test.SchedPodBuilder) {
					b.PreferredNodeTerm(10, test.NodeRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z))
				})
			case 4:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.Toleration("dedicated", "gpu", corev1.TaintEffectNoSchedule) })
			case 5:
				skew := int32(1 + r.Intn(2))
				target := []string{app, other}[r.Intn(2)]
				when := []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}[r.Intn(2)]
				md := r.Intn(3)
				honorTaints := r.Intn(3) == 0
				opts = append(opts, func(b *test.SchedPodBuilder) {
					c := corev1.TopologySpreadConstraint{TopologyKey: corev1.LabelTopologyZone, MaxSkew: skew, WhenUnsatisfiable: when,
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": target}}}
					if md > 0 && when == corev1.DoNotSchedule {
						c.MinDomains = ptr.To(int32(md + 1))
					}
					if honorTaints {
						c.NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
					}
					b.SpreadConstraint(c)
				})
			case 6:
				skew := int32(1 + r.Intn(2))
				opts = append(opts, func(b *test.SchedPodBuilder) { b.HostnameSpread(skew, "app", app) })
			case 7:
				target := []string{app, other}[r.Intn(2)]
				opts = append(opts, func(b *test.SchedPodBuilder) { b.PodAffinity(corev1.LabelTopologyZone, "app", target) })
			case 8:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.PodAffinity(corev1.LabelHostname, "app", app) })
			case 9:
				target := []string{app, other}[r.Intn(2)]
				opts = append(opts, func(b *test.SchedPodBuilder) { b.PodAntiAffinity(corev1.LabelHostname, "app", target) })
			case 10:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.PodAntiAffinity(corev1.LabelTopologyZone, "app", app) })
			case 11:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.HostPort(8080) })
			case 12:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.InitContainer("2", "1Gi").Sidecar("100m", "128Mi") })
			case 13:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.Overhead("250m", "256Mi") })
			case 14:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.Request("nvidia.com/gpu", "1") })
			case 15:
				target := []string{app, other}[r.Intn(2)]
				opts = append(opts, func(b *test.SchedPodBuilder) { b.PreferredPodAntiAffinity(50, corev1.LabelHostname, "app", target) })
			case 16:
				opts = append(opts, func(b *test.SchedPodBuilder) { b.NodeSelector("team", "a") })
			}
		}
		withPVC := r.Intn(8) == 0
		for i := 0; i < replicas; i++ {
			b := test.SchedPod(fmt.Sprintf("%s-%d", app, i)).Requests(cpu, mem).Labels("app", app)
			for _, o := range opts {
				o(b)
			}
			if withPVC {
				claim := fmt.Sprintf("data-%s-%d", app, i)
				b.PVC(claim)
				snap.PersistentVolumeClaims = append(snap.PersistentVolumeClaims, pvc(claim, r, zones, snap))
			}
			snap.Pods = append(snap.Pods, b.Obj())
		}
	}
	return snap
}

func round(x float64) float64 { return float64(int64(x*10000)) / 10000 }

func pvc(name string, r *rand.Rand, zones []string, snap *scheduling.Snapshot) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if r.Intn(2) == 0 {
		c.Spec.StorageClassName = ptr.To("zonal")
		return c
	}
	pvName := "pv-" + name
	c.Spec.VolumeName = pvName
	snap.PersistentVolumes = append(snap.PersistentVolumes, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: pvName}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zones[r.Intn(len(zones))]}}}}}}},
		}})
	return c
}
