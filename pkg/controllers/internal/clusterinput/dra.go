package clusterinput

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// draInput gathers what resource claims are planned against (IGNORE_DRA_REQUESTS=false): the cluster's
// ResourceClaims, ResourceClaimTemplates, DeviceClasses and ResourceSlices from the cache, and the device models of
// instance types with the overrides of the dovetail-dra-device-models ConfigMap. problem is set, and the state nil,
// when the overrides do not validate: pods with claims are then unschedulable with it.
func draInput(ctx context.Context, d deps.Deps) (state *scheduling.DRA, problem string, err error) {
	models, problem, err := deviceModels(ctx, d)
	if err != nil || problem != "" {
		return nil, problem, err
	}
	state = &scheduling.DRA{Models: models}
	claims := &resourcev1.ResourceClaimList{}
	if err := d.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing resourceclaims: %w", err)
	}
	for i := range claims.Items {
		state.Claims = append(state.Claims, &claims.Items[i])
	}
	templates := &resourcev1.ResourceClaimTemplateList{}
	if err := d.Client.List(ctx, templates, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing resourceclaimtemplates: %w", err)
	}
	for i := range templates.Items {
		state.ClaimTemplates = append(state.ClaimTemplates, &templates.Items[i])
	}
	classes := &resourcev1.DeviceClassList{}
	if err := d.Client.List(ctx, classes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing deviceclasses: %w", err)
	}
	for i := range classes.Items {
		state.DeviceClasses = append(state.DeviceClasses, &classes.Items[i])
	}
	slices := &resourcev1.ResourceSliceList{}
	if err := d.Client.List(ctx, slices, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing resourceslices: %w", err)
	}
	for i := range slices.Items {
		state.Slices = append(state.Slices, &slices.Items[i])
	}
	sort.Slice(state.Slices, func(i, j int) bool { return state.Slices[i].Name < state.Slices[j].Name })
	return state, "", nil
}

// deviceModels reads the overrides ConfigMap (from the API server: the controller caches no ConfigMaps) and
// returns the models with them.
func deviceModels(ctx context.Context, d deps.Deps) (*devices.Models, string, error) {
	reader := d.APIReader
	if reader == nil {
		reader = d.Client
	}
	cm := &corev1.ConfigMap{}
	version, data := "", []byte(nil)
	err := reader.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: devices.OverridesConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, "", fmt.Errorf("reading configmap %s/%s: %w", d.Namespace, devices.OverridesConfigMap, err)
	default:
		version = cm.ResourceVersion
		data = []byte(cm.Data[devices.OverridesKey])
		if _, ok := cm.Data[devices.OverridesKey]; !ok {
			return nil, fmt.Sprintf("configmap %s/%s has no key %s: DRA device models are not planned for until it does",
				d.Namespace, devices.OverridesConfigMap, devices.OverridesKey), nil
		}
	}
	models, err := d.DeviceModels.Models(version, data)
	if err != nil {
		return nil, fmt.Sprintf("configmap %s/%s key %s: %v", d.Namespace, devices.OverridesConfigMap, devices.OverridesKey, err), nil
	}
	return models, "", nil
}
