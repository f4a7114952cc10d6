package metrics

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// scrape gathers c on a pedantic registry and returns "name{label=value,...} value" lines of the series whose
// name is in only (all when empty), labels with empty values left out.
func scrape(t *testing.T, c prometheus.Collector, only ...string) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if len(only) > 0 && !contains(only, f.GetName()) {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				if l.GetValue() != "" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			out = append(out, fmt.Sprintf("%s{%s} %v", f.GetName(), strings.Join(labels, ","), s.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestNodes: one series a node and resource with the node's labels, the lifetime from the clock, and the
// cluster's utilization from the sums.
func TestNodes(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	n := NewNodes(func() time.Time { return now })
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", Labels: map[string]string{
		"karpenter.sh/nodepool": "web", "node.kubernetes.io/instance-type": "m5.large", "karpenter.k8s.aws/instance-cpu": "2"}},
		Status: corev1.NodeStatus{Phase: corev1.NodeRunning}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-2"}}
	n.Replace([]NodeEntry{
		{Labels: NodeLabelValues(other), Created: now.Add(-time.Minute), Allocatable: []ResourceValue{{"cpu", 2}}},
		{Labels: NodeLabelValues(node), Created: now.Add(-time.Hour), Allocatable: []ResourceValue{{"cpu", 2}},
			PodRequests: []ResourceValue{{"cpu", 1.5}}, DaemonRequests: []ResourceValue{{"cpu", 0.5}}, Overhead: []ResourceValue{{"ephemeral-storage", 1e9}}},
	})
	want := []string{
		"karpenter_cluster_state_node_count{} 2",
		"karpenter_cluster_utilization_percent{resource_type=cpu} 37.5",
		"karpenter_nodes_allocatable{instance_cpu=2,instance_type=m5.large,managed=true,node_name=ip-1,nodepool=web,phase=Running,resource_type=cpu} 2",
		"karpenter_nodes_allocatable{managed=false,node_name=ip-2,resource_type=cpu} 2",
		"karpenter_nodes_current_lifetime_seconds{instance_cpu=2,instance_type=m5.large,managed=true,node_name=ip-1,nodepool=web,phase=Running} 3600",
		"karpenter_nodes_current_lifetime_seconds{managed=false,node_name=ip-2} 60",
		"karpenter_nodes_system_overhead{instance_cpu=2,instance_type=m5.large,managed=true,node_name=ip-1,nodepool=web,phase=Running,resource_type=ephemeral_storage} 1e+09",
		"karpenter_nodes_total_daemon_requests{instance_cpu=2,instance_type=m5.large,managed=true,node_name=ip-1,nodepool=web,phase=Running,resource_type=cpu} 0.5",
		"karpenter_nodes_total_pod_requests{instance_cpu=2,instance_type=m5.large,managed=true,node_name=ip-1,nodepool=web,phase=Running,resource_type=cpu} 1.5",
	}
	if diff := cmp.Diff(want, scrape(t, n)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	n.Replace(nil)
	if diff := cmp.Diff([]string{"karpenter_cluster_state_node_count{} 0"}, scrape(t, n)); diff != "" {
		t.Errorf("after Replace(nil) (-want +got):\n%s", diff)
	}
}

// TestNodeLabelNames: the label names of the node series are Karpenter's (the key's name part, snake case), each
// once.
func TestNodeLabelNames(t *testing.T) {
	names := nodeLabelNames()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("label %s twice", n)
		}
		seen[n] = true
	}
	for _, n := range []string{"nodepool", "capacity_type", "zone", "zone_id", "instance_cpu_sustained_clock_speed_mhz", "windows_build", "node_name", "phase", "managed"} {
		if !seen[n] {
			t.Errorf("no label %s in %v", n, names)
		}
	}
	if len(names) != 39 {
		t.Errorf("%d labels, want 39 (36 node labels, node_name, phase, managed)", len(names))
	}
}

// TestPods: karpenter_pods_state for every pod; the unbound and unstarted ages only for pods that are so.
func TestPods(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := NewPods(func() time.Time { return now })
	p.Set(&PodEntry{Name: "web-1", Namespace: "default", OwnerAPIVersion: "apps/v1", OwnerKind: "ReplicaSet", OwnerName: "web-abc",
		Node: "ip-1", NodePool: "web", Zone: "us-west-2a", Arch: "amd64", CapacityType: "spot", InstanceType: "m5.large",
		Phase: "Running", Ready: true, Created: now.Add(-time.Hour), Bound: true})
	p.Set(&PodEntry{Name: "web-2", Namespace: "default", Phase: "Pending", Created: now.Add(-30 * time.Second)})
	p.Set(&PodEntry{Name: "web-3", Namespace: "default", Node: "ip-1", NodePool: "web", Phase: "Pending", Created: now.Add(-10 * time.Second), Bound: true})
	want := []string{
		"karpenter_pods_state{arch=amd64,capacity_type=spot,instance_type=m5.large,managed=true,name=web-1,namespace=default,node=ip-1,nodepool=web,owner=/apis/apps/v1/namespaces/default/replicasets/web-abc,phase=Running,ready=true,scheduled=true,zone=us-west-2a} 1",
		"karpenter_pods_state{managed=false,name=web-2,namespace=default,phase=Pending,ready=false,scheduled=false} 1",
		"karpenter_pods_state{managed=true,name=web-3,namespace=default,node=ip-1,nodepool=web,phase=Pending,ready=false,scheduled=true} 1",
		"karpenter_pods_unbound_time_seconds{dynamic_resources=false,name=web-2,namespace=default} 30",
		"karpenter_pods_unstarted_time_seconds{name=web-2,namespace=default} 30",
		"karpenter_pods_unstarted_time_seconds{name=web-3,namespace=default} 10",
	}
	if diff := cmp.Diff(want, scrape(t, p)); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
	p.Delete(types.NamespacedName{Namespace: "default", Name: "web-2"})
	if got := len(scrape(t, p, "karpenter_pods_state")); got != 2 {
		t.Errorf("%d pods after a deletion, want 2", got)
	}
}

// TestPodsProvisioningAges: the provisioning ages of a pod follow the moments the provisioner recorded for it: the
// undecided age from its first sighting until a pass decides, the unbound and unstarted ages from the pass that
// found it a place, none after a pass that found none, none for a pod of another UID, and none once forgotten.
func TestPodsProvisioningAges(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := NewPods(func() time.Time { return now })
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	pending := &PodEntry{Name: "web", Namespace: "default", Phase: "Pending", Created: now.Add(-time.Minute), UID: "u1", DynamicResources: true}
	p.Set(pending)
	families := []string{"karpenter_pods_provisioning_scheduling_undecided_time_seconds", "karpenter_pods_provisioning_unbound_time_seconds",
		"karpenter_pods_provisioning_unstarted_time_seconds"}
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"not seen by the provisioner", func() {}, nil},
		{"seen 40 s ago", func() { p.Times.Ack(key, "u1", now.Add(-40*time.Second)) }, []string{
			"karpenter_pods_provisioning_scheduling_undecided_time_seconds{name=web,namespace=default} 40",
		}},
		{"placed 30 s ago", func() { p.Times.Decide(key, "u1", now.Add(-30*time.Second), true) }, []string{
			"karpenter_pods_provisioning_unbound_time_seconds{dynamic_resources=true,name=web,namespace=default} 30",
			"karpenter_pods_provisioning_unstarted_time_seconds{name=web,namespace=default} 30",
		}},
		{"placed again 10 s ago: the first place counts", func() { p.Times.Decide(key, "u1", now.Add(-10*time.Second), true) }, []string{
			"karpenter_pods_provisioning_unbound_time_seconds{dynamic_resources=true,name=web,namespace=default} 30",
			"karpenter_pods_provisioning_unstarted_time_seconds{name=web,namespace=default} 30",
		}},
		{"bound", func() {
			p.Set(&PodEntry{Name: "web", Namespace: "default", Node: "ip-1", Phase: "Pending", Bound: true, UID: "u1"})
		}, []string{
			"karpenter_pods_provisioning_unstarted_time_seconds{name=web,namespace=default} 30",
		}},
		{"a later pass finds no place", func() {
			p.Set(pending)
			p.Times.Decide(key, "u1", now.Add(-5*time.Second), false)
		}, nil},
		{"moments of another pod of that name", func() {
			p.Times.Forget(key)
			p.Times.Ack(key, "u0", now.Add(-50*time.Second))
		}, nil},
		{"forgotten with the pod", func() {
			p.Times.Ack(key, "u1", now.Add(-50*time.Second))
			p.Delete(key)
			p.Set(pending)
		}, nil},
	}
	for _, s := range steps {
		s.change()
		if diff := cmp.Diff(s.want, scrape(t, p, families...)); diff != "" {
			t.Errorf("%s: series (-want +got):\n%s", s.name, diff)
		}
	}
}
