package framework

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DeviceClassesPath is the file with the DeviceClasses of the drivers the simulator models (gpu.nvidia.com,
// mig.nvidia.com, dranet).
func DeviceClassesPath() string {
	return filepath.Join(RepoRoot(), "examples", "dra", "deviceclasses.yaml")
}

// DeviceRequest is one request of a claim: count devices of a class, with optional CEL selectors.
type DeviceRequest struct {
	Name      string
	Class     string
	Count     int64
	Selectors []string
}

// ClaimTemplate returns a ResourceClaimTemplate with the requests; matchAttribute, when set, constrains all of
// them to devices with the same value of that attribute (e.g. resource.kubernetes.io/pcieRoot).
func ClaimTemplate(namespace, name string, matchAttribute string, requests ...DeviceRequest) *resourcev1.ResourceClaimTemplate {
	var reqs []resourcev1.DeviceRequest
	var names []string
	for _, r := range requests {
		exact := &resourcev1.ExactDeviceRequest{DeviceClassName: r.Class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: r.Count}
		for _, s := range r.Selectors {
			exact.Selectors = append(exact.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
		}
		reqs = append(reqs, resourcev1.DeviceRequest{Name: r.Name, Exactly: exact})
		names = append(names, r.Name)
	}
	t := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	t.Spec.Spec.Devices.Requests = reqs
	if matchAttribute != "" {
		t.Spec.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: names, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName(matchAttribute))}}
	}
	return t
}

// UseClaimTemplate makes every container of the pod spec use one claim per pod from the template.
func UseClaimTemplate(spec *corev1.PodSpec, template string) {
	spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: template, ResourceClaimTemplateName: ptr.To(template)})
	for i := range spec.Containers {
		spec.Containers[i].Resources.Claims = append(spec.Containers[i].Resources.Claims, corev1.ResourceClaim{Name: template})
	}
}
