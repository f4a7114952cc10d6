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
