//go:build e2e

package dra

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// applyDeviceClasses applies the DeviceClasses of the modelled drivers.
func applyDeviceClasses(t *testing.T) {
	t.Helper()
	if err := framework.ApplyFile(context.Background(), env.Client, framework.DeviceClassesPath()); err != nil {
		t.Fatal(err)
	}
}

// launch starts one instance of the type outside any NodePool (no user data: its Node joins this cluster
// without labels or taints of a NodePool), terminates it when the test ends, and returns the Node's name once
// the Node exists.
func launch(t *testing.T, instanceType string) (node, id string) {
	t.Helper()
	ctx := context.Background()
	imgs, err := env.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("no image to launch: %v", err)
	}
	subnets, err := env.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("no subnet: %v", err)
	}
	out, err := env.EC2.RunInstances(ctx, &ec2.RunInstancesInput{
		ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceType(instanceType), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId: subnets.Subnets[0].SubnetId,
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("RunInstances %s: %v", instanceType, err)
	}
	id = aws.ToString(out.Instances[0].InstanceId)
	t.Cleanup(func() { terminate(t, id) })
	err = framework.Poll(ctx, time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		nodes := &corev1.NodeList{}
		if err := env.Client.List(ctx, nodes); err != nil {
			return false, "", err
		}
		for _, n := range nodes.Items {
			if strings.HasSuffix(n.Spec.ProviderID, "/"+id) {
				node = n.Name
				return true, "", nil
			}
		}
		return false, "no Node with instance " + id, nil
	})
	if err != nil {
		t.Fatalf("Node of %s (%s): %v", id, instanceType, err)
	}
	return node, id
}

func terminate(t *testing.T, id string) {
	t.Helper()
	if _, err := env.EC2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Errorf("terminating %s: %v", id, err)
	}
}

// slicesOf returns the ResourceSlices published for a node.
func slicesOf(ctx context.Context, node string) ([]resourcev1.ResourceSlice, error) {
	l := &resourcev1.ResourceSliceList{}
	if err := env.Client.List(ctx, l, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector(resourcev1.ResourceSliceSelectorNodeName, node)}); err != nil {
		return nil, fmt.Errorf("listing ResourceSlices of %s: %w", node, err)
	}
	return l.Items, nil
}

// deviceCounts summarises slices as driver -> number of devices.
func deviceCounts(slices []resourcev1.ResourceSlice) map[string]int {
	out := map[string]int{}
	for _, s := range slices {
		out[s.Spec.Driver] += len(s.Spec.Devices)
	}
	return out
}

// claimPod returns a pod that uses one claim from the template; node, when set, pins it to that Node.
func claimPod(namespace, name, template, node string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": template}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	framework.UseClaimTemplate(&p.Spec, template)
	return p
}

// waitPodsRunning waits until every named pod is Running and returns them.
func waitPodsRunning(t *testing.T, namespace string, names []string, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := framework.Poll(context.Background(), timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		pods = pods[:0]
		var waiting []string
		for _, n := range names {
			p := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: n}, p); err != nil {
				return false, "", err
			}
			if p.Status.Phase != corev1.PodRunning {
				waiting = append(waiting, n+"="+string(p.Status.Phase)+lastCondition(p))
			}
			pods = append(pods, *p)
		}
		return len(waiting) == 0, strings.Join(waiting, ", "), nil
	})
	if err != nil {
		t.Fatalf("waiting for pods %v to run: %v", names, err)
	}
	return pods
}

// lastCondition is the message of a pod's PodScheduled=False condition, if any.
func lastCondition(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return " (" + c.Message + ")"
		}
	}
	return ""
}

// allocation returns the devices allocated to the pod's claim (from the template) as "driver/pool/device", sorted.
func allocation(ctx context.Context, p *corev1.Pod) ([]string, error) {
	var claimName string
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			claimName = *s.ResourceClaimName
		}
	}
	if claimName == "" {
		return nil, fmt.Errorf("pod %s has no generated claim", p.Name)
	}
	c := &resourcev1.ResourceClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: claimName}, c); err != nil {
		return nil, err
	}
	if c.Status.Allocation == nil {
		return nil, fmt.Errorf("claim %s of pod %s is not allocated", claimName, p.Name)
	}
	var out []string
	for _, r := range c.Status.Allocation.Devices.Results {
		out = append(out, r.Driver+"/"+r.Pool+"/"+r.Device)
	}
	sort.Strings(out)
	return out, nil
}

// deviceAttribute returns the string (or version) value of a device's attribute, read from the node's slices.
func deviceAttribute(slices []resourcev1.ResourceSlice, driver, device string, attr resourcev1.QualifiedName) string {
	for _, s := range slices {
		if s.Spec.Driver != driver {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name != device {
				continue
			}
			a := d.Attributes[attr]
			switch {
			case a.StringValue != nil:
				return *a.StringValue
			case a.VersionValue != nil:
				return *a.VersionValue
			}
		}
	}
	return ""
}

func metaName(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
