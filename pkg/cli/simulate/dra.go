package simulate

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// DRANamespace is where --from-cluster looks for the dovetail-dra-device-models ConfigMap: the controller's
// default namespace.
const DRANamespace = "kube-system"

// readDRA gathers what pending pods' resource claims are planned against, as the controller does with
// IGNORE_DRA_REQUESTS=false: the cluster's ResourceClaims, ResourceClaimTemplates, DeviceClasses and
// ResourceSlices, and the device models of the catalog (the built-in ones of the AWS gates DRANVIDIAGPU and DRAEFA
// that are on) with the overrides of the dovetail-dra-device-models ConfigMap. It returns nil when no pending pod
// has claims or the API server does not serve resource.k8s.io/v1.
func readDRA(ctx context.Context, c client.Reader, pending []*corev1.Pod, nvidiaGPU, efa bool) (*scheduling.DRA, error) {
	withClaims := false
	for _, p := range pending {
		if len(p.Spec.ResourceClaims) > 0 {
			withClaims = true
			break
		}
	}
	if !withClaims {
		return nil, nil
	}
	var (
		claims    resourcev1.ResourceClaimList
		templates resourcev1.ResourceClaimTemplateList
		classes   resourcev1.DeviceClassList
		slices    resourcev1.ResourceSliceList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"resourceclaims", &claims}, {"resourceclaimtemplates", &templates}, {"deviceclasses", &classes}, {"resourceslices", &slices}} {
		if err := c.List(ctx, l.list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || runtime.IsNotRegisteredError(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("--from-cluster: listing %s: %w", l.what, err)
		}
	}
	var overrides *devices.Overrides
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: DRANamespace, Name: devices.OverridesConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("--from-cluster: reading configmap %s/%s: %w", DRANamespace, devices.OverridesConfigMap, err)
	default:
		if overrides, err = devices.ParseOverrides([]byte(cm.Data[devices.OverridesKey])); err != nil {
			return nil, fmt.Errorf("--from-cluster: configmap %s/%s key %s: %w", DRANamespace, devices.OverridesConfigMap, devices.OverridesKey, err)
		}
	}
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the instance type catalog for DRA device models: %w", err)
	}
	models, err := devices.New(cat, devices.Options{NVIDIAGPU: nvidiaGPU, EFA: efa, Overrides: overrides})
	if err != nil {
		return nil, fmt.Errorf("--from-cluster: configmap %s/%s key %s: %w", DRANamespace, devices.OverridesConfigMap, devices.OverridesKey, err)
	}
	d := &scheduling.DRA{Models: models}
	for i := range claims.Items {
		d.Claims = append(d.Claims, &claims.Items[i])
	}
	for i := range templates.Items {
		d.ClaimTemplates = append(d.ClaimTemplates, &templates.Items[i])
	}
	for i := range classes.Items {
		d.DeviceClasses = append(d.DeviceClasses, &classes.Items[i])
	}
	for i := range slices.Items {
		d.Slices = append(d.Slices, &slices.Items[i])
	}
	sort.Slice(d.Slices, func(i, j int) bool { return d.Slices[i].Name < d.Slices[j].Name })
	return d, nil
}

// dra is readDRA for the objects of the input files: their DeviceClasses, ResourceClaimTemplates and
// ResourceClaims, and the built-in device models of the gates that are on. It returns nil when no pod has claims.
func (o *objects) dra(nvidiaGPU, efa bool) (*scheduling.DRA, error) {
	withClaims := false
	for _, p := range o.pods {
		if len(p.Spec.ResourceClaims) > 0 {
			withClaims = true
			break
		}
	}
	if !withClaims {
		return nil, nil
	}
	cat, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the instance type catalog for DRA device models: %w", err)
	}
	models, err := devices.New(cat, devices.Options{NVIDIAGPU: nvidiaGPU, EFA: efa})
	if err != nil {
		return nil, fmt.Errorf("DRA device models: %w", err)
	}
	return &scheduling.DRA{Models: models, DeviceClasses: o.deviceClasses, ClaimTemplates: o.claimTemplates, Claims: o.claims}, nil
}
