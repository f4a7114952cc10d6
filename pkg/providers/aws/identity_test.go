package aws_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

// TestNameConflicts: two clusters named alike in one account each see the other (by its UID) through its
// instance and launch template, and nothing of their own; a cluster alone sees no conflict.
func TestNameConflicts(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	a.resolvedNodeClass(t)
	ctx := context.Background()
	if _, err := a.Create(ctx, claim("a-1", "m5.large")); err != nil {
		t.Fatalf("Create(a): %v", err)
	}
	if got, err := a.NameConflicts(ctx); err != nil || len(got.Conflicts) != 0 || got.Listed != 2 {
		t.Fatalf("a alone: NameConflicts = %+v, %v; want none, 2 resources listed (a's instance and launch template)", got, err)
	}

	b := w.provider(t, "uid-b")
	b.resolvedNodeClass(t)
	cb, err := b.Create(ctx, claim("b-1", "m5.large"))
	if err != nil {
		t.Fatalf("Create(b): %v", err)
	}
	idB, _ := instance.ParseProviderID(cb.Status.ProviderID)
	lts, err := b.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	check, err := a.NameConflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := check.Conflicts
	if len(got) != 1 || got[0].ClusterUID != "uid-b" {
		t.Fatalf("a: NameConflicts = %+v, want one conflict with uid-b", check)
	}
	res := strings.Join(got[0].Resources, ",")
	if !strings.Contains(res, idB) || !strings.Contains(res, "lt-") || len(got[0].Resources) != 2 {
		t.Errorf("a: conflict resources = %v, want b's instance %s and its launch template (of %d templates in the account)", got[0].Resources, idB, len(lts.LaunchTemplates))
	}
	if check.Listed != 4 {
		t.Errorf("a: %d resources listed, want 4 (both clusters' instance and launch template)", check.Listed)
	}
	check, err = b.NameConflicts(ctx)
	if err != nil || len(check.Conflicts) != 1 || check.Conflicts[0].ClusterUID != "uid-a" {
		t.Errorf("b: NameConflicts = %+v, %v; want one conflict with uid-a", check, err)
	}
}
