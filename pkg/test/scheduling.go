package test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// SchedPodBuilder builds pending pods for scheduler tests:
// test.SchedPod("web-1").Requests("1", "2Gi").Labels("app", "web").ZoneSpread(1, "app", "web").Obj().
type SchedPodBuilder struct{ pod *corev1.Pod }

// SchedPod starts a pending pod in namespace "default" with one container and no requests.
func SchedPod(name string) *SchedPodBuilder {
	return &SchedPodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}}
}

// Namespace sets the namespace.
func (b *SchedPodBuilder) Namespace(ns string) *SchedPodBuilder { b.pod.Namespace = ns; return b }

// Labels adds labels from key, value pairs.
func (b *SchedPodBuilder) Labels(kv ...string) *SchedPodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		b.pod.Labels[kv[i]] = kv[i+1]
	}
	return b
}

// Requests sets the first container's cpu and memory requests ("" leaves one out).
func (b *SchedPodBuilder) Requests(cpu, memory string) *SchedPodBuilder {
	b.pod.Spec.Containers[0].Resources.Requests = resources(cpu, memory)
	return b
}

// Request sets one request of the first container.
func (b *SchedPodBuilder) Request(name corev1.ResourceName, q string) *SchedPodBuilder {
	c := &b.pod.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(q)
	return b
}

// Container adds a further container with cpu and memory requests.
func (b *SchedPodBuilder) Container(cpu, memory string) *SchedPodBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, corev1.Container{
		Name: fmt.Sprintf("c%d", len(b.pod.Spec.Containers)), Resources: corev1.ResourceRequirements{Requests: resources(cpu, memory)}})
	return b
}

// InitContainer adds a run-to-completion init container.
func (b *SchedPodBuilder) InitContainer(cpu, memory string) *SchedPodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
		Name: fmt.Sprintf("init%d", len(b.pod.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: resources(cpu, memory)}})
	return b
}

// Sidecar adds a restartable init container (restartPolicy Always).
func (b *SchedPodBuilder) Sidecar(cpu, memory string) *SchedPodBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
		Name: fmt.Sprintf("sidecar%d", len(b.pod.Spec.InitContainers)), RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: resources(cpu, memory)}})
	return b
}

// Overhead sets the pod overhead (RuntimeClass).
func (b *SchedPodBuilder) Overhead(cpu, memory string) *SchedPodBuilder {
	b.pod.Spec.Overhead = resources(cpu, memory)
	return b
}

// NodeSelector adds a nodeSelector entry.
func (b *SchedPodBuilder) NodeSelector(key, value string) *SchedPodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[key] = value
	return b
}

// Zone pins the pod to a zone with a nodeSelector.
func (b *SchedPodBuilder) Zone(zone string) *SchedPodBuilder {
	return b.NodeSelector(corev1.LabelTopologyZone, zone)
}

func (b *SchedPodBuilder) affinity() *corev1.Affinity {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &corev1.Affinity{}
	}
	return b.pod.Spec.Affinity
}

// NodeRequirement builds a node selector requirement.
func NodeRequirement(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// RequiredNodeTerm adds one required node affinity term (terms are ORed).
func (b *SchedPodBuilder) RequiredNodeTerm(reqs ...corev1.NodeSelectorRequirement) *SchedPodBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return b
}

// PreferredNodeTerm adds a preferred node affinity term with a weight.
func (b *SchedPodBuilder) PreferredNodeTerm(weight int32, reqs ...corev1.NodeSelectorRequirement) *SchedPodBuilder {
	a := b.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	return b
}

// Toleration adds a toleration (operator Equal when value is set, Exists otherwise).
func (b *SchedPodBuilder) Toleration(key, value string, effect corev1.TaintEffect) *SchedPodBuilder {
	t := corev1.Toleration{Key: key, Value: value, Effect: effect, Operator: corev1.TolerationOpEqual}
	if value == "" {
		t.Operator = corev1.TolerationOpExists
	}
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, t)
	return b
}

func selector(kv []string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

// Spread adds a topology spread constraint; the selector is given as key, value pairs.
func (b *SchedPodBuilder) Spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, kv ...string) *SchedPodBuilder {
	b.pod.Spec.TopologySpreadConstraints = append(b.pod.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		TopologyKey: key, MaxSkew: maxSkew, WhenUnsatisfiable: when, LabelSelector: selector(kv)})
	return b
}

// SpreadConstraint adds a fully specified topology spread constraint.
func (b *SchedPodBuilder) SpreadConstraint(c corev1.TopologySpreadConstraint) *SchedPodBuilder {
	b.pod.Spec.TopologySpreadConstraints = append(b.pod.Spec.TopologySpreadConstraints, c)
	return b
}

// ZoneSpread adds a DoNotSchedule zone spread constraint.
func (b *SchedPodBuilder) ZoneSpread(maxSkew int32, kv ...string) *SchedPodBuilder {
	return b.Spread(corev1.LabelTopologyZone, maxSkew, corev1.DoNotSchedule, kv...)
}

// HostnameSpread adds a DoNotSchedule hostname spread constraint.
func (b *SchedPodBuilder) HostnameSpread(maxSkew int32, kv ...string) *SchedPodBuilder {
	return b.Spread(corev1.LabelHostname, maxSkew, corev1.DoNotSchedule, kv...)
}

func affinityTerm(key string, kv []string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: selector(kv)}
}

// PodAffinity adds a required pod affinity term on key.
func (b *SchedPodBuilder) PodAffinity(key string, kv ...string) *SchedPodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, affinityTerm(key, kv))
	return b
}

// PreferredPodAffinity adds a preferred pod affinity term on key.
func (b *SchedPodBuilder) PreferredPodAffinity(weight int32, key string, kv ...string) *SchedPodBuilder {
	a := b.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: affinityTerm(key, kv)})
	return b
}

// PodAntiAffinity adds a required pod anti-affinity term on key.
func (b *SchedPodBuilder) PodAntiAffinity(key string, kv ...string) *SchedPodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, affinityTerm(key, kv))
	return b
}

// PreferredPodAntiAffinity adds a preferred pod anti-affinity term on key.
func (b *SchedPodBuilder) PreferredPodAntiAffinity(weight int32, key string, kv ...string) *SchedPodBuilder {
	a := b.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: affinityTerm(key, kv)})
	return b
}

// HostPort adds a TCP host port to the first container.
func (b *SchedPodBuilder) HostPort(port int32) *SchedPodBuilder {
	c := &b.pod.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	return b
}

// PVC mounts a persistent volume claim.
func (b *SchedPodBuilder) PVC(claim string) *SchedPodBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, corev1.Volume{Name: claim,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return b
}

// Obj returns the pod.
func (b *SchedPodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

func resources(cpu, memory string) corev1.ResourceList {
	r := corev1.ResourceList{}
	if cpu != "" {
		r[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		r[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return r
}

// SchedInstanceTypeBuilder builds cloudprovider.InstanceType values.
type SchedInstanceTypeBuilder struct{ it *cloudprovider.InstanceType }

// SchedInstanceType starts an amd64 linux instance type with cpu, memory, 110 pods and 20Gi ephemeral storage,
// no overhead and no offerings.
func SchedInstanceType(name, cpu, memory string) *SchedInstanceTypeBuilder {
	return &SchedInstanceTypeBuilder{it: &cloudprovider.InstanceType{
		Name:   name,
		Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelInstanceTypeStable: name},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")},
	}}
}

// Label sets a label.
func (b *SchedInstanceTypeBuilder) Label(k, v string) *SchedInstanceTypeBuilder {
	b.it.Labels[k] = v
	return b
}

// Capacity sets one capacity entry.
func (b *SchedInstanceTypeBuilder) Capacity(name corev1.ResourceName, q string) *SchedInstanceTypeBuilder {
	b.it.Capacity[name] = resource.MustParse(q)
	return b
}

// Overhead sets kube-reserved cpu and memory.
func (b *SchedInstanceTypeBuilder) Overhead(cpu, memory string) *SchedInstanceTypeBuilder {
	b.it.Overhead.KubeReserved = resources(cpu, memory)
	return b
}

// Offering adds an available offering.
func (b *SchedInstanceTypeBuilder) Offering(zone, capacityType string, price float64) *SchedInstanceTypeBuilder {
	b.it.Offerings = append(b.it.Offerings, cloudprovider.Offering{Zone: zone, CapacityType: capacityType, Price: price, Available: true})
	return b
}

// Unavailable adds an offering the cloud has no capacity for.
func (b *SchedInstanceTypeBuilder) Unavailable(zone, capacityType string, price float64) *SchedInstanceTypeBuilder {
	b.it.Offerings = append(b.it.Offerings, cloudprovider.Offering{Zone: zone, CapacityType: capacityType, Price: price})
	return b
}

// Zones adds on-demand offerings at price in each zone.
func (b *SchedInstanceTypeBuilder) Zones(price float64, zones ...string) *SchedInstanceTypeBuilder {
	for _, z := range zones {
		b.Offering(z, cloudprovider.CapacityTypeOnDemand, price)
	}
	return b
}

// Obj returns the instance type.
func (b *SchedInstanceTypeBuilder) Obj() *cloudprovider.InstanceType { return b.it }

// SchedNodeBuilder builds scheduling.StateNode values (existing nodes or in-flight NodeClaims).
type SchedNodeBuilder struct{ n *scheduling.StateNode }

// SchedNode starts a node with allocatable cpu, memory and 110 pods, labelled with its hostname.
func SchedNode(name, cpu, memory string) *SchedNodeBuilder {
	alloc := resources(cpu, memory)
	alloc[corev1.ResourcePods] = resource.MustParse("110")
	return &SchedNodeBuilder{n: &scheduling.StateNode{Name: name, Labels: map[string]string{corev1.LabelHostname: name},
		Allocatable: alloc}}
}

// Label sets a label.
func (b *SchedNodeBuilder) Label(k, v string) *SchedNodeBuilder { b.n.Labels[k] = v; return b }

// Zone sets the zone label.
func (b *SchedNodeBuilder) Zone(z string) *SchedNodeBuilder {
	return b.Label(corev1.LabelTopologyZone, z)
}

// Taint adds a taint.
func (b *SchedNodeBuilder) Taint(key, value string, effect corev1.TaintEffect) *SchedNodeBuilder {
	b.n.Taints = append(b.n.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Pods adds bound pods (their NodeName is set).
func (b *SchedNodeBuilder) Pods(pods ...*corev1.Pod) *SchedNodeBuilder {
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = b.n.Name
		p.Status.Phase = corev1.PodRunning
		b.n.Pods = append(b.n.Pods, p)
	}
	return b
}

// InFlight marks the node as an in-flight NodeClaim of the NodePool.
func (b *SchedNodeBuilder) InFlight(nodePool string) *SchedNodeBuilder {
	b.n.InFlight, b.n.NodePool = true, nodePool
	delete(b.n.Labels, corev1.LabelHostname)
	return b
}

// VolumeLimit caps attachable volumes of a CSI driver.
func (b *SchedNodeBuilder) VolumeLimit(driver string, n int) *SchedNodeBuilder {
	if b.n.VolumeLimits == nil {
		b.n.VolumeLimits = map[string]int{}
	}
	b.n.VolumeLimits[driver] = n
	return b
}

// Obj returns the node.
func (b *SchedNodeBuilder) Obj() *scheduling.StateNode { return b.n }

// SchedNodePoolBuilder builds scheduling.NodePool views.
type SchedNodePoolBuilder struct{ np *scheduling.NodePool }

// SchedNodePool starts a NodePool with no requirements, weight 0 and no limits.
func SchedNodePool(name string) *SchedNodePoolBuilder {
	return &SchedNodePoolBuilder{np: &scheduling.NodePool{Name: name}}
}

// Requirement adds a requirement.
func (b *SchedNodePoolBuilder) Requirement(key string, op corev1.NodeSelectorOperator, values ...string) *SchedNodePoolBuilder {
	b.np.Requirements = append(b.np.Requirements, scheduling.NodeSelectorRequirementWithMinValues{
		NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}})
	return b
}

// MinValues sets minValues on the last requirement.
func (b *SchedNodePoolBuilder) MinValues(n int) *SchedNodePoolBuilder {
	b.np.Requirements[len(b.np.Requirements)-1].MinValues = &n
	return b
}

// Weight sets the weight.
func (b *SchedNodePoolBuilder) Weight(w int32) *SchedNodePoolBuilder { b.np.Weight = w; return b }

// Label adds a template label.
func (b *SchedNodePoolBuilder) Label(k, v string) *SchedNodePoolBuilder {
	if b.np.Labels == nil {
		b.np.Labels = map[string]string{}
	}
	b.np.Labels[k] = v
	return b
}

// Taint adds a taint.
func (b *SchedNodePoolBuilder) Taint(key, value string, effect corev1.TaintEffect) *SchedNodePoolBuilder {
	b.np.Taints = append(b.np.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// StartupTaint adds a startup taint.
func (b *SchedNodePoolBuilder) StartupTaint(key, value string, effect corev1.TaintEffect) *SchedNodePoolBuilder {
	b.np.StartupTaints = append(b.np.StartupTaints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return b
}

// Limit sets a limit (cpu, memory, nodes, ...).
func (b *SchedNodePoolBuilder) Limit(name corev1.ResourceName, q string) *SchedNodePoolBuilder {
	if b.np.Limits == nil {
		b.np.Limits = corev1.ResourceList{}
	}
	b.np.Limits[name] = resource.MustParse(q)
	return b
}

// Usage sets current usage of one resource.
func (b *SchedNodePoolBuilder) Usage(name corev1.ResourceName, q string) *SchedNodePoolBuilder {
	if b.np.Usage == nil {
		b.np.Usage = corev1.ResourceList{}
	}
	b.np.Usage[name] = resource.MustParse(q)
	return b
}

// Obj returns the NodePool view.
func (b *SchedNodePoolBuilder) Obj() *scheduling.NodePool { return b.np }

// SchedDaemonSet wraps a pod template as a DaemonSet in the pod's namespace.
func SchedDaemonSet(pod *corev1.Pod) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels}, Spec: pod.Spec}}}
}
