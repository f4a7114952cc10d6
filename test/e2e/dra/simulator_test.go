//go:build e2e

package dra

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestSimulatedDevicesServeTheKubeScheduler needs no controller: instances launched straight through EC2 become
// Nodes whose ResourceSlices the simulator publishes; the real kube-scheduler allocates claims from them (GPUs
// and an EFA interface on one PCIe root; whole GPUs and MIG partitions drawing on the same shared counters);
// kwok runs the pods; the slices go with the instances.
func TestSimulatedDevicesServeTheKubeScheduler(t *testing.T) {
	ctx := context.Background()
	const ns = "drasim"
	env.Namespace(t, ns)
	applyDeviceClasses(t)

	// A g5.12xlarge: four A10G GPUs and one EFA interface.
	g5, g5ID := launch(t, "g5.12xlarge")
	var slices = waitSlices(t, g5, map[string]int{"gpu.nvidia.com": 4, "dra.net": 1})
	for _, s := range slices {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Node" || s.OwnerReferences[0].Name != g5 {
			t.Errorf("slice %s owners %v, want the Node %s", s.Name, s.OwnerReferences, g5)
		}
	}
	if got := deviceAttribute(slices, "gpu.nvidia.com", "gpu-0", "productName"); got != "NVIDIA A10G" {
		t.Errorf("gpu-0 productName = %q, want NVIDIA A10G", got)
	}
	tmpl := framework.ClaimTemplate(ns, "gpus-efa", "resource.kubernetes.io/pcieRoot",
		framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 2},
		framework.DeviceRequest{Name: "efa", Class: "dranet", Count: 1})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, claimPod(ns, "gpus-efa", tmpl.Name, g5)); err != nil {
		t.Fatal(err)
	}
	pods := waitPodsRunning(t, ns, []string{"gpus-efa"}, time.Minute)
	got, err := allocation(ctx, &pods[0])
	if err != nil {
		t.Fatal(err)
	}
	drivers := map[string]int{}
	roots := map[string]bool{}
	for _, d := range got {
		parts := strings.SplitN(d, "/", 3)
		if parts[1] != g5 {
			t.Errorf("device %s is not from the node's pool %s", d, g5)
		}
		drivers[parts[0]]++
		roots[deviceAttribute(slices, parts[0], parts[2], "resource.kubernetes.io/pcieRoot")] = true
	}
	if d := cmp.Diff(map[string]int{"gpu.nvidia.com": 2, "dra.net": 1}, drivers); d != "" {
		t.Errorf("allocated devices %v by driver (-want +got):\n%s", got, d)
	}
	if len(roots) != 1 {
		t.Errorf("allocated devices %v sit on PCIe roots %v, want one", got, roots)
	}

	// A p4d.24xlarge: eight MIG-capable A100 GPUs. Whole GPUs take every counter of their GPU, so once each GPU is
	// claimed whole no MIG partition is left; freeing one GPU lets a MIG claim in.
	p4d, _ := launch(t, "p4d.24xlarge")
	waitSlices(t, p4d, map[string]int{"gpu.nvidia.com": 8 * 19, "dra.net": 4})
	whole := framework.ClaimTemplate(ns, "whole-gpu", "", framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 1})
	mig := framework.ClaimTemplate(ns, "mig-1g", "", framework.DeviceRequest{Name: "gpu", Class: "mig.nvidia.com", Count: 1,
		Selectors: []string{"device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}})
	for _, o := range []client.Object{whole, mig} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for i := range 8 {
		name := fmt.Sprintf("whole-%d", i)
		if err := env.Client.Create(ctx, claimPod(ns, name, whole.Name, p4d)); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	waitPodsRunning(t, ns, names, time.Minute)
	if err := env.Client.Create(ctx, claimPod(ns, "mig", mig.Name, p4d)); err != nil {
		t.Fatal(err)
	}
	err = framework.Consistently(ctx, 8*time.Second, time.Second, func(ctx context.Context) error {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mig"}, p); err != nil {
			return err
		}
		if p.Spec.NodeName != "" {
			return fmt.Errorf("MIG pod bound to %s while all eight GPUs are claimed whole", p.Spec.NodeName)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metaName(ns, "whole-0")}); err != nil {
		t.Fatal(err)
	}
	pods = waitPodsRunning(t, ns, []string{"mig"}, time.Minute)
	if got, err := allocation(ctx, &pods[0]); err != nil || len(got) != 1 || !strings.Contains(got[0], "-mig-1g-5gb-") {
		t.Errorf("MIG pod allocation %v, %v; want one 1g.5gb partition", got, err)
	}

	// The slices go with the Node.
	terminate(t, g5ID)
	err = framework.Poll(ctx, time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		s, err := slicesOf(ctx, g5)
		return len(s) == 0, fmt.Sprintf("%d slices left", len(s)), err
	})
	if err != nil {
		t.Errorf("slices of terminated %s: %v", g5, err)
	}
}

// waitSlices waits until the node's slices hold the given number of devices per driver and returns them.
func waitSlices(t *testing.T, node string, want map[string]int) []resourcev1.ResourceSlice {
	t.Helper()
	var got []resourcev1.ResourceSlice
	err := framework.Poll(context.Background(), time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		s, err := slicesOf(ctx, node)
		got = s
		return cmp.Equal(want, deviceCounts(s)), fmt.Sprintf("devices by driver %v", deviceCounts(s)), err
	})
	if err != nil {
		t.Fatalf("ResourceSlices of %s: %v", node, err)
	}
	return got
}
