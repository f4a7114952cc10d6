package test

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DeviceClass returns a DeviceClass selecting devices with one CEL expression.
func DeviceClass(name, expression string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expression}}}}}
}

// ClaimSpecBuilder builds ResourceClaimTemplates and ResourceClaims:
// test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 2).SameAttribute("resource.kubernetes.io/pcieRoot").Template("default", "two-gpus").
type ClaimSpecBuilder struct{ spec resourcev1.ResourceClaimSpec }

// ClaimSpec starts an empty claim spec.
func ClaimSpec() *ClaimSpecBuilder { return &ClaimSpecBuilder{} }

// Exactly adds a request for count devices of the class matching every selector expression.
func (b *ClaimSpecBuilder) Exactly(name, class string, count int64, selectors ...string) *ClaimSpecBuilder {
	r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count, Selectors: celSelectors(selectors)}}
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, r)
	return b
}

// AllOf adds a request for all devices of the class matching the selectors.
func (b *ClaimSpecBuilder) AllOf(name, class string, selectors ...string) *ClaimSpecBuilder {
	r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class,
		AllocationMode: resourcev1.DeviceAllocationModeAll, Selectors: celSelectors(selectors)}}
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, r)
	return b
}

// FirstAvailable adds a request satisfied by the first alternative that can be: each alternative is one device of
// the class matching one selector expression.
func (b *ClaimSpecBuilder) FirstAvailable(name, class string, alternatives ...string) *ClaimSpecBuilder {
	r := resourcev1.DeviceRequest{Name: name}
	for i, a := range alternatives {
		r.FirstAvailable = append(r.FirstAvailable, resourcev1.DeviceSubRequest{Name: string(rune('a' + i)), DeviceClassName: class,
			AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1, Selectors: celSelectors([]string{a})})
	}
	b.spec.Devices.Requests = append(b.spec.Devices.Requests, r)
	return b
}

// SameAttribute constrains the named requests (all when none) to devices with one value of attribute.
func (b *ClaimSpecBuilder) SameAttribute(attribute string, requests ...string) *ClaimSpecBuilder {
	a := resourcev1.FullyQualifiedName(attribute)
	b.spec.Devices.Constraints = append(b.spec.Devices.Constraints, resourcev1.DeviceConstraint{Requests: requests, MatchAttribute: &a})
	return b
}

// Template returns a ResourceClaimTemplate with the spec.
func (b *ClaimSpecBuilder) Template(namespace, name string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: *b.spec.DeepCopy()}}
}

// Claim returns a ResourceClaim with the spec, not allocated.
func (b *ClaimSpecBuilder) Claim(namespace, name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec: *b.spec.DeepCopy()}
}

// AllocatedClaim returns a ResourceClaim allocated on node with the given devices of driver (pool named after the
// node, as node-local drivers do).
func AllocatedClaim(namespace, name, node, driver string, devices ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}}
	a := &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourcev1.DeviceRequestAllocationResult{Request: "r", Driver: driver, Pool: node, Device: d})
	}
	c.Status.Allocation = a
	return c
}

func celSelectors(exprs []string) []resourcev1.DeviceSelector {
	var out []resourcev1.DeviceSelector
	for _, e := range exprs {
		out = append(out, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: e}})
	}
	return out
}

// ClaimTemplate makes the pod claim devices from a ResourceClaimTemplate under the pod claim name.
func (b *SchedPodBuilder) ClaimTemplate(podClaim, template string) *SchedPodBuilder {
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: podClaim, ResourceClaimTemplateName: &template})
	b.pod.Spec.Containers[0].Resources.Claims = append(b.pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: podClaim})
	return b
}

// Claim makes the pod use the named ResourceClaim under the pod claim name.
func (b *SchedPodBuilder) Claim(podClaim, claim string) *SchedPodBuilder {
	b.pod.Spec.ResourceClaims = append(b.pod.Spec.ResourceClaims, corev1.PodResourceClaim{Name: podClaim, ResourceClaimName: &claim})
	b.pod.Spec.Containers[0].Resources.Claims = append(b.pod.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: podClaim})
	return b
}

// Generated records in the pod's status that the claim generated for its pod claim podClaim (from a
// ResourceClaimTemplate) is named claim, as the resource claim controller does.
func (b *SchedPodBuilder) Generated(podClaim, claim string) *SchedPodBuilder {
	b.pod.Status.ResourceClaimStatuses = append(b.pod.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: podClaim, ResourceClaimName: &claim})
	return b
}
