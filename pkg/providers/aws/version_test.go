package aws_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/settings"
)

// amiVersions returns the Kubernetes versions named by the AMIs (amazon-eks-node-al2023-<arch>-<variant>-<k8s>-v<date>).
func amiVersions(t *testing.T, amis []awsv1.AMI) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, a := range amis {
		parts := strings.Split(a.Name, "-")
		if len(parts) < 3 {
			t.Fatalf("AMI name %q", a.Name)
		}
		out[parts[len(parts)-2]] = true
	}
	return out
}

func resolveAMIs(t *testing.T, p *provider, nc *awsv1.EC2NodeClass) map[string]bool {
	t.Helper()
	amis, err := p.ResolveAMIs(context.Background(), nc)
	if err != nil {
		t.Fatalf("ResolveAMIs: %v", err)
	}
	return amiVersions(t, amis)
}

// TestKubernetesVersionFromEKSIsRefreshed (EKS_CONTROL_PLANE=true): after a control-plane upgrade the alias
// resolves the new version's AMIs once the version is read again (VersionRefresh), without a restart, and a
// NodeClaim on the old AMI is then drifted.
func TestKubernetesVersionFromEKSIsRefreshed(t *testing.T) {
	w := newWorld(t)
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.Settings = &settings.Settings{ClusterName: "dovetail", VMMemoryOverheadPercent: 0.075, EKSControlPlane: true}
		o.ServerVersion = func(context.Context) (string, error) { return "1.99", nil } // not consulted
	})
	ctx := context.Background()
	nc := p.resolvedNodeClass(t)
	if got := amiVersions(t, nc.Status.AMIs); !got["1.34"] || len(got) != 1 {
		t.Fatalf("AMIs before the upgrade are for %v, want 1.34", got)
	}
	created, err := p.Create(ctx, claim("default-v134", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.SetKubernetesVersion("1.35"); err != nil {
		t.Fatal(err)
	}
	if got := resolveAMIs(t, p, nc); !got["1.34"] || len(got) != 1 {
		t.Errorf("AMIs right after the upgrade are for %v, want still 1.34 (the version is read every %s)", got, aws.VersionRefresh)
	}
	w.clock.Step(aws.VersionRefresh)
	if got := resolveAMIs(t, p, nc); !got["1.35"] || len(got) != 1 {
		t.Fatalf("AMIs %s after the upgrade are for %v, want 1.35", aws.VersionRefresh, got)
	}
	// The node class status controller stores the new AMIs; the NodeClaim on a 1.34 AMI is drifted.
	stored := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: nc.Name}, stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.AMIs, err = p.ResolveAMIs(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if err := p.kube.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	w.clock.Step(time.Hour) // past the drift cache of the instance description
	reason, err := p.IsDrifted(ctx, created)
	if err != nil || reason != karpv1.ReasonAMIDrift {
		t.Errorf("IsDrifted after the upgrade = %q, %v; want %s", reason, err, karpv1.ReasonAMIDrift)
	}
}

// TestKubernetesVersionFromAPIServer (EKS_CONTROL_PLANE=false, the default): the version is the API server's, not
// EKS's, and read again every VersionRefresh; a failed read keeps the version known before.
func TestKubernetesVersionFromAPIServer(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	server, serverErr := "1.34", error(nil)
	calls := 0
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.ServerVersion = func(context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return server, serverErr
		}
	})
	set := func(v string, err error) {
		mu.Lock()
		defer mu.Unlock()
		server, serverErr = v, err
	}
	nc := p.resolvedNodeClass(t)
	if got := amiVersions(t, nc.Status.AMIs); !got["1.34"] || len(got) != 1 {
		t.Fatalf("AMIs are for %v, want 1.34", got)
	}
	// EKS now says 1.35 (its AMIs are published too); the API server still says 1.34, and it is the source.
	if err := w.sim.SetKubernetesVersion("1.35"); err != nil {
		t.Fatal(err)
	}
	w.clock.Step(aws.VersionRefresh)
	if got := resolveAMIs(t, p, nc); !got["1.34"] || len(got) != 1 {
		t.Fatalf("AMIs are for %v, want the API server's 1.34", got)
	}
	set("1.35", nil)
	w.clock.Step(aws.VersionRefresh - time.Second)
	if got := resolveAMIs(t, p, nc); !got["1.34"] {
		t.Errorf("AMIs before the refresh are for %v, want 1.34", got)
	}
	w.clock.Step(time.Second)
	if got := resolveAMIs(t, p, nc); !got["1.35"] || len(got) != 1 {
		t.Errorf("AMIs after the refresh are for %v, want 1.35", got)
	}
	set("", context.DeadlineExceeded)
	w.clock.Step(aws.VersionRefresh)
	if got := resolveAMIs(t, p, nc); !got["1.35"] {
		t.Errorf("AMIs after a failed refresh are for %v, want the previous 1.35", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 4 {
		t.Errorf("%d version reads, want 4 (start, three refreshes)", calls)
	}
}
