package aws_test

import (
	"context"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestCollectInstanceProfiles: of the profiles this cluster made, the one of a node class that still exists, and
// the one of a deleted node class whose instance still runs, stay; the one of a deleted node class without
// instances goes once it is an hour old; another cluster's profile in the same account is never touched.
func TestCollectInstanceProfiles(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	b := w.provider(t, "uid-b")
	ctx := context.Background()
	busy := a.resolvedNodeClass(t) // "default": its instance runs after the class is gone
	keep := a.resolve(t, test.EC2NodeClass("keep", "dovetail").Obj())
	gone := a.resolve(t, test.EC2NodeClass("gone", "dovetail").Obj())
	other := b.resolvedNodeClass(t)
	if _, err := a.Create(ctx, claim("c", "m5.large")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	classes := []awsv1.EC2NodeClass{*keep}

	deleted, err := a.CollectInstanceProfiles(ctx, classes)
	if err != nil || len(deleted) != 0 {
		t.Fatalf("within the protection window: deleted %v, %v", deleted, err)
	}
	w.clock.Step(resolve.InstanceProfileProtection)
	deleted, err = a.CollectInstanceProfiles(ctx, classes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{gone.Status.InstanceProfile}, deleted); diff != "" {
		t.Errorf("deleted profiles (-want +got):\n%s", diff)
	}
	api := iam.NewFromConfig(w.sdkConfig("AKIDACCOUNTA"))
	for _, tc := range []struct {
		name   string
		exists bool
	}{{busy.Status.InstanceProfile, true}, {keep.Status.InstanceProfile, true}, {gone.Status.InstanceProfile, false}, {other.Status.InstanceProfile, true}} {
		_, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(tc.name)})
		if exists := err == nil; exists != tc.exists {
			t.Errorf("profile %s exists %v (%v), want %v", tc.name, exists, sdk.ErrorCode(err), tc.exists)
		}
	}
	// Cluster b's own pass knows only its class: it deletes nothing of cluster a.
	if deleted, err := b.CollectInstanceProfiles(ctx, []awsv1.EC2NodeClass{*other}); err != nil || len(deleted) != 0 {
		t.Errorf("cluster b deleted %v, %v", deleted, err)
	}
}

func TestProfilesToCollect(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	owned := []resolve.OwnedProfile{
		{Name: "c_old-unused", Created: now.Add(-2 * time.Hour)},
		{Name: "c_old-kept", Created: now.Add(-2 * time.Hour)},
		{Name: "c_new-unused", Created: now.Add(-time.Minute)},
		{Name: "c_an-hour", Created: now.Add(-resolve.InstanceProfileProtection)},
	}
	got := resolve.ProfilesToCollect(owned, map[string]bool{"c_old-kept": true}, now)
	if diff := cmp.Diff([]string{"c_an-hour", "c_old-unused"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
