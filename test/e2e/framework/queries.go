package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// NodeClaims lists the NodeClaims of a NodePool.
func (s *Stack) NodeClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	l := &karpv1.NodeClaimList{}
	if err := s.Client.List(ctx, l, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of %s: %w", pool, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// Nodes lists the Nodes of a NodePool.
func (s *Stack) Nodes(ctx context.Context, pool string) ([]corev1.Node, error) {
	l := &corev1.NodeList{}
	if err := s.Client.List(ctx, l, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil, fmt.Errorf("listing nodes of %s: %w", pool, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// Pods lists the pods matching labels in a namespace.
func (s *Stack) Pods(ctx context.Context, namespace string, labels map[string]string) ([]corev1.Pod, error) {
	l := &corev1.PodList{}
	if err := s.Client.List(ctx, l, client.InNamespace(namespace), client.MatchingLabels(labels)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

// InstanceID returns the EC2 instance id in a provider id of the form aws:///<zone>/<instance-id>.
func InstanceID(providerID string) string {
	return providerID[strings.LastIndex(providerID, "/")+1:]
}

// InstanceStates returns the simulator's state of each instance ("pending", "running", "shutting-down",
// "terminated"); instances the simulator no longer knows are absent from the map.
func (s *Stack) InstanceStates(ctx context.Context, ids ...string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	p := ec2.NewDescribeInstancesPaginator(s.EC2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out[aws.ToString(inst.InstanceId)] = string(inst.State.Name)
			}
		}
	}
	return out, nil
}

// ClusterInstances returns the ids and states of the instances tagged for the cluster that are pending or running.
func (s *Stack) ClusterInstances(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	p := ec2.NewDescribeInstancesPaginator(s.EC2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/" + s.ClusterName}},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
		},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeInstances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out[aws.ToString(inst.InstanceId)] = string(inst.State.Name)
			}
		}
	}
	return out, nil
}

// TerminateOutOfBand terminates an instance through the EC2 API, as a user or another tool would.
func (s *Stack) TerminateOutOfBand(ctx context.Context, id string) error {
	_, err := s.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return fmt.Errorf("TerminateInstances %s: %w", id, err)
	}
	return nil
}

// Events returns the messages of the events about an object (by kind and name), oldest first, as
// "Reason: message".
func (s *Stack) Events(ctx context.Context, namespace, kind, name string) ([]string, error) {
	l := &corev1.EventList{}
	if err := s.Client.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].CreationTimestamp.Before(&l.Items[j].CreationTimestamp) })
	var out []string
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out, nil
}

// PodAvailable reports whether a pod counts as available: Ready and not being deleted.
func PodAvailable(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Describe returns what a failed wait needs to be understood: the pods of namespace that are not Running (node,
// nominated node, the kube-scheduler's last word), and the Nodes (zone, instance type, taints, pod count) and
// NodeClaims (node, conditions that hold) of NodePool pool. It uses a context of its own, so a wait that ran out
// of time can still describe the state it ended in.
func (s *Stack) Describe(namespace, pool string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	pods, err := s.Pods(ctx, namespace, nil)
	if err != nil {
		fmt.Fprintf(&b, "  %v\n", err)
	}
	perNode := map[string]int{}
	for i := range pods {
		p := &pods[i]
		perNode[p.Spec.NodeName]++
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		why := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				why = c.Reason + ": " + c.Message
			}
		}
		fmt.Fprintf(&b, "  pod %s: phase=%s node=%q nominated=%q deleting=%t %s\n", p.Name, p.Status.Phase,
			p.Spec.NodeName, p.Status.NominatedNodeName, p.DeletionTimestamp != nil, why)
	}
	nodes, err := s.Nodes(ctx, pool)
	if err != nil {
		fmt.Fprintf(&b, "  %v\n", err)
	}
	for i := range nodes {
		n := &nodes[i]
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		fmt.Fprintf(&b, "  node %s: zone=%s type=%s pods=%d deleting=%t taints=%v\n", n.Name,
			n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelInstanceTypeStable], perNode[n.Name],
			n.DeletionTimestamp != nil, taints)
	}
	claims, err := s.NodeClaims(ctx, pool)
	if err != nil {
		fmt.Fprintf(&b, "  %v\n", err)
	}
	for i := range claims {
		c := &claims[i]
		var held []string
		for _, cond := range c.Status.Conditions {
			if cond.Status == metav1.ConditionTrue {
				held = append(held, cond.Type)
			}
		}
		fmt.Fprintf(&b, "  nodeclaim %s: node=%q provider-id=%q deleting=%t conditions=%v\n", c.Name,
			c.Status.NodeName, c.Status.ProviderID, c.DeletionTimestamp != nil, held)
	}
	return b.String()
}

// RemoveTaint removes the taints with the key from the named Node, as the agent that owns a startup taint does once
// it is ready; a Node without such a taint is left as it is.
func (s *Stack) RemoveTaint(ctx context.Context, name, key string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return fmt.Errorf("reading node %s: %w", name, err)
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == key })
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		return s.Client.Update(ctx, node)
	})
}
