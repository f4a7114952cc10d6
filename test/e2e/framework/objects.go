package framework

import (
	"context"
	"fmt"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// ExampleNodePool returns the NodePool and EC2NodeClass of examples/nodepool.yaml renamed to name (the NodePool
// refers to the EC2NodeClass of the same name), so each test has a pair of its own.
func ExampleNodePool(name string) ([]*unstructured.Unstructured, error) {
	objs, err := ReadObjects(filepath.Join(RepoRoot(), "examples", "nodepool.yaml"))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		o.SetName(name)
		if o.GetKind() == "NodePool" {
			if err := unstructured.SetNestedField(o.Object, name, "spec", "template", "spec", "nodeClassRef", "name"); err != nil {
				return nil, err
			}
		}
	}
	return objs, nil
}

// Deployment returns a Deployment of replicas pods that request cpu and memory and select the NodePool's nodes.
func Deployment(namespace, name, nodePool string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: nodePool},
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse(cpu),
							corev1.ResourceMemory: resource.MustParse(memory),
						}},
					}},
				},
			},
		},
	}
}

// EnsureNamespace creates the namespace if it does not exist and waits for its default service account, which
// the API server needs before it admits pods.
func EnsureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return Poll(ctx, defaultWait, pollInterval, func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
		if apierrors.IsNotFound(err) {
			return false, "waiting for service account default/" + name, nil
		}
		return err == nil, "", err
	})
}

// PoolOptions adjust the example NodePool for a scenario.
type PoolOptions struct {
	// InstanceTypes, when set, restricts node.kubernetes.io/instance-type to these types.
	InstanceTypes []string
	// CapacityTypes, when set, replaces the karpenter.sh/capacity-type requirement.
	CapacityTypes []string
	// Categories, when set, replaces the karpenter.k8s.aws/instance-category requirement.
	Categories []string
	// TerminationGracePeriod sets spec.template.spec.terminationGracePeriod (e.g. "30s").
	TerminationGracePeriod string
	// ConsolidateAfter, when set, replaces spec.disruption.consolidateAfter (e.g. "5s", "Never").
	ConsolidateAfter string
	// ConsolidationPolicy, when set, replaces spec.disruption.consolidationPolicy (e.g. "Balanced").
	ConsolidationPolicy string
	// Budgets, when set, replace spec.disruption.budgets (the example's schedule blocks Underutilized on weekdays
	// from 09:00 to 17:00 UTC), e.g. []map[string]any{{"nodes": "100%"}}.
	Budgets []map[string]any
	// Annotations are added to the NodePool's metadata (e.g. Dovetail's interruption policies).
	Annotations map[string]string
	// Requirements replace the example's requirements on the same keys and add the others, e.g.
	// {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": []any{"4"}}.
	Requirements []map[string]any
	// Alias, when set, replaces the EC2NodeClass's AMI alias (e.g. "windows2025@latest").
	Alias string
	// Replicas, when set, makes the NodePool static (spec.replicas); Limits then replaces spec.limits (a static
	// NodePool takes only limits.nodes), e.g. map[string]any{"nodes": "6"}, or removes it when nil. Without
	// Replicas, Limits, when set, replaces the example's spec.limits.
	Replicas *int64
	Limits   map[string]any
	// StartupTaints, when set, become spec.template.spec.startupTaints: pods stay off a new node until the test
	// lifts them (Stack.RemoveTaint), as a node agent does once it is ready.
	StartupTaints []corev1.Taint
}

// NodePool returns the example NodePool and EC2NodeClass named name, adjusted by opts.
func NodePool(name string, opts PoolOptions) ([]*unstructured.Unstructured, error) {
	objs, err := ExampleNodePool(name)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() == "EC2NodeClass" && opts.Alias != "" {
			if err := unstructured.SetNestedSlice(o.Object, []any{map[string]any{"alias": opts.Alias}}, "spec", "amiSelectorTerms"); err != nil {
				return nil, err
			}
		}
		if o.GetKind() != "NodePool" {
			continue
		}
		replaced := map[string]bool{}
		for _, r := range opts.Requirements {
			replaced[r["key"].(string)] = true
		}
		reqs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "requirements")
		if err != nil {
			return nil, err
		}
		var out []any
		for _, r := range reqs {
			key, _ := r.(map[string]any)["key"].(string)
			switch {
			case replaced[key]:
				continue
			case key == karpv1.CapacityTypeLabelKey && len(opts.CapacityTypes) > 0:
				continue
			case key == "karpenter.k8s.aws/instance-category" && (len(opts.Categories) > 0 || len(opts.InstanceTypes) > 0):
				continue
			}
			out = append(out, r)
		}
		add := func(key string, values []string) {
			vs := make([]any, len(values))
			for i, v := range values {
				vs[i] = v
			}
			out = append(out, map[string]any{"key": key, "operator": "In", "values": vs})
		}
		if len(opts.CapacityTypes) > 0 {
			add(karpv1.CapacityTypeLabelKey, opts.CapacityTypes)
		}
		if len(opts.Categories) > 0 {
			add("karpenter.k8s.aws/instance-category", opts.Categories)
		}
		if len(opts.InstanceTypes) > 0 {
			add(corev1.LabelInstanceTypeStable, opts.InstanceTypes)
		}
		for _, r := range opts.Requirements {
			out = append(out, r)
		}
		if err := unstructured.SetNestedSlice(o.Object, out, "spec", "template", "spec", "requirements"); err != nil {
			return nil, err
		}
		if opts.TerminationGracePeriod != "" {
			if err := unstructured.SetNestedField(o.Object, opts.TerminationGracePeriod, "spec", "template", "spec", "terminationGracePeriod"); err != nil {
				return nil, err
			}
		}
		if len(opts.Annotations) > 0 {
			annotations := o.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			for k, v := range opts.Annotations {
				annotations[k] = v
			}
			o.SetAnnotations(annotations)
		}
		if opts.Budgets != nil {
			budgets := make([]any, len(opts.Budgets))
			for i, b := range opts.Budgets {
				budgets[i] = b
			}
			if err := unstructured.SetNestedSlice(o.Object, budgets, "spec", "disruption", "budgets"); err != nil {
				return nil, err
			}
		}
		if opts.Replicas != nil {
			if err := unstructured.SetNestedField(o.Object, *opts.Replicas, "spec", "replicas"); err != nil {
				return nil, err
			}
			unstructured.RemoveNestedField(o.Object, "spec", "limits")
			if opts.Limits != nil {
				if err := unstructured.SetNestedMap(o.Object, opts.Limits, "spec", "limits"); err != nil {
					return nil, err
				}
			}
		} else if opts.Limits != nil {
			if err := unstructured.SetNestedMap(o.Object, opts.Limits, "spec", "limits"); err != nil {
				return nil, err
			}
		}
		if opts.ConsolidateAfter != "" {
			if err := unstructured.SetNestedField(o.Object, opts.ConsolidateAfter, "spec", "disruption", "consolidateAfter"); err != nil {
				return nil, err
			}
		}
		if len(opts.StartupTaints) > 0 {
			taints := make([]any, 0, len(opts.StartupTaints))
			for _, taint := range opts.StartupTaints {
				m := map[string]any{"key": taint.Key, "effect": string(taint.Effect)}
				if taint.Value != "" {
					m["value"] = taint.Value
				}
				taints = append(taints, m)
			}
			if err := unstructured.SetNestedSlice(o.Object, taints, "spec", "template", "spec", "startupTaints"); err != nil {
				return nil, err
			}
		}
		if opts.ConsolidationPolicy != "" {
			if err := unstructured.SetNestedField(o.Object, opts.ConsolidationPolicy, "spec", "disruption", "consolidationPolicy"); err != nil {
				return nil, err
			}
		}
	}
	return objs, nil
}
