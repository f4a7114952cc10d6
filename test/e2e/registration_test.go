//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// registrationTimeout is the controller's REGISTRATION_TIMEOUT in this suite (main_test.go).
const registrationTimeout = 60 * time.Second

// TestRegistrationTimeout (scenario 6, registration): the first instance launched for a pending pod runs but never
// gets a Node (the simulator's no-node fault, for one instance of this NodePool). After REGISTRATION_TIMEOUT the
// NodeClaim is deleted, with an event saying why, and the instance is terminated; the fault then being used up,
// the pod gets a node from a new NodeClaim.
func TestRegistrationTimeout(t *testing.T) {
	ctx := context.Background()
	const pool = "regtimeout"
	setupPool(t, pool, framework.PoolOptions{})
	if err := simAdmin(ctx, http.MethodPost, "faults/no-node", map[string]any{"nodePool": pool, "count": 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := simAdmin(context.Background(), http.MethodDelete, "faults/no-node", nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	labels := map[string]string{"app": "late"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "late", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}

	// The NodeClaim is launched; its instance runs without a Node.
	var claim karpv1.NodeClaim
	err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil || len(claims) != 1 || claims[0].Status.ProviderID == "" {
			return false, fmt.Sprintf("%d nodeclaims, none launched", len(claims)), err
		}
		claim = claims[0]
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("waiting for a launched nodeclaim: %v", err)
	}
	instance := framework.InstanceID(claim.Status.ProviderID)
	t.Logf("nodeclaim %s launched instance %s", claim.Name, instance)

	// Until the timeout: the instance runs, no Node has its providerID, the NodeClaim says it waits for one.
	// Then the NodeClaim is deleted and goes away once its instance is terminated.
	var deletedAt time.Time
	err = framework.Poll(ctx, registrationTimeout+time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		if err := noNodeFor(ctx, claim.Status.ProviderID); err != nil {
			return false, "", err
		}
		nc := &karpv1.NodeClaim{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(&claim), nc)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		if nc.DeletionTimestamp != nil && deletedAt.IsZero() {
			deletedAt = nc.DeletionTimestamp.Time
		}
		registered := "no Registered condition"
		if c := nc.GetCondition(karpv1.ConditionTypeRegistered); c != nil {
			registered = fmt.Sprintf("Registered=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return false, fmt.Sprintf("nodeclaim %s still there after %.0fs (deleting: %v; %s)", nc.Name,
			time.Since(nc.CreationTimestamp.Time).Seconds(), nc.DeletionTimestamp != nil, registered), nil
	})
	if err != nil {
		t.Fatalf("nodeclaim %s not removed after the registration timeout: %v", claim.Name, err)
	}
	if !deletedAt.IsZero() {
		// Timestamps are whole seconds: allow 1 s of rounding.
		if age := deletedAt.Sub(claim.CreationTimestamp.Time); age < registrationTimeout-time.Second {
			t.Errorf("nodeclaim %s deleted %s after its creation, before the %s registration timeout", claim.Name, age, registrationTimeout)
		}
	}
	states, err := env.InstanceStates(ctx, instance)
	if err != nil {
		t.Fatal(err)
	}
	if s := states[instance]; s != "shutting-down" && s != "terminated" && s != "" {
		t.Errorf("instance %s is %q after its nodeclaim was removed, want shutting-down or terminated", instance, s)
	}
	events, err := mentions(ctx, claim.Name, "", "registered within")
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(events, "RegistrationTimeout: ", registrationTimeout.String()) {
		t.Errorf("no RegistrationTimeout event on nodeclaim %s naming the %s timeout; found %q", claim.Name, registrationTimeout, events)
	}

	// The fault held back one instance only: the pod now gets a node of a new NodeClaim.
	waitRunning(t, pool, labels, 1, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 1 || claims[0].Name == claim.Name || claims[0].Status.NodeName == "" {
		t.Errorf("after the timeout: nodeclaims %v, want one new registered nodeclaim", nodeClaimNames(claims))
	}
}

// noNodeFor fails if a Node has the providerID.
func noNodeFor(ctx context.Context, providerID string) error {
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		if n.Spec.ProviderID == providerID {
			return fmt.Errorf("node %s has providerID %s although the simulator holds its Node back", n.Name, providerID)
		}
	}
	return nil
}

func nodeClaimNames(claims []karpv1.NodeClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.Name)
	}
	return out
}

// simAdmin calls the AWS simulator's admin API (docs/simulator.md) with a JSON body.
func simAdmin(ctx context.Context, method, path string, body any) error {
	return env.SimAdmin(ctx, method, path, body)
}
