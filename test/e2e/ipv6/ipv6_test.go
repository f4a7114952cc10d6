//go:build e2e

package ipv6

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

const (
	// serviceIPv6CIDR is the IPv6 service range of the simulated EKS cluster and of the local API server (the
	// second range of its dual-stack --service-cluster-ip-range, hack/cluster-up.sh).
	serviceIPv6CIDR = "fd00:10:96::/108"
	// kubeDNS is the kube-dns Service's ClusterIP: not the tenth address of the range, so a node that got it
	// learnt it from the Service.
	kubeDNS = "fd00:10:96::35"
)

// TestIPv6ClusterLaunchesNodes: in an IPv6 cluster with IPv6-only subnets (no free IPv4 address counted) whose
// kube-dns Service has an IPv6 ClusterIP, the controller launches nodes whose user data hands the kubelet that
// address and whose instance has an IPv6 address and no IPv4 one (the simulator gives a Node only to instances with
// an IPv6 address), the Nodes are named after their instance and carry the IPv6 InternalIP first, and the pods run.
func TestIPv6ClusterLaunchesNodes(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: kubeDNS, IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			Selector: map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := env.Client.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the kube-dns Service: %v", err)
	}
	if err := env.StartController(ctx); err != nil {
		t.Fatalf("starting the controller: %v", err)
	}
	const pool = "ipv6"
	if err := framework.EnsureNamespace(ctx, env.Client, pool); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 3, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels(labels))
		return p.PodsRunning >= 3, p.String(), err
	}); err != nil {
		t.Fatalf("waiting for 3 Running pods: %v\n%s", err, env.Describe(pool, pool))
	}

	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) == 0 {
		t.Fatal("no nodes in the pool")
	}
	instances, err := simInstances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		id := framework.InstanceID(n.Spec.ProviderID)
		inst, ok := instances[id]
		if !ok {
			t.Errorf("node %s: instance %s unknown to the simulator", n.Name, id)
			continue
		}
		if inst.ClusterDNS != kubeDNS {
			t.Errorf("node %s: the user data gives the kubelet cluster DNS %q, want the kube-dns ClusterIP %s", n.Name, inst.ClusterDNS, kubeDNS)
		}
		if a, err := netip.ParseAddr(inst.IPv6Address); err != nil || !a.Is6() {
			t.Errorf("node %s: instance %s has IPv6 address %q", n.Name, id, inst.IPv6Address)
		}
		if inst.PrivateIP != "" || !strings.HasPrefix(n.Name, id+".") {
			t.Errorf("node %s: instance %s has private IPv4 address %q; want none in an IPv6-only subnet and a Node named after the instance", n.Name, id, inst.PrivateIP)
		}
		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Type != corev1.NodeInternalIP || n.Status.Addresses[0].Address != inst.IPv6Address {
			t.Errorf("node %s: addresses %v, want the InternalIP %s first", n.Name, n.Status.Addresses, inst.IPv6Address)
		}
	}
	for id, inst := range instances {
		if inst.NodeJoinError != "" {
			t.Errorf("instance %s cannot join the IPv6 cluster: %s", id, inst.NodeJoinError)
		}
	}
}

// simInstances reads the simulator's instances by id (GET /_awssim/state).
func simInstances(ctx context.Context) (map[string]awssim.InstanceInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.AWSEndpoint+"/_awssim/state", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the simulator's state: %w", err)
	}
	defer resp.Body.Close()
	var st awssim.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("decoding the simulator's state: %w", err)
	}
	out := map[string]awssim.InstanceInfo{}
	for _, i := range st.Instances {
		if !strings.EqualFold(i.State, "terminated") {
			out[i.ID] = i
		}
	}
	return out, nil
}
