package simulate

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/catalog"
)

// TestCatalogTypesChooseTenancy: as the controller's, the catalog's instance types let the launch choose the
// instance tenancy, so a pod selecting dedicated tenancy is planned without a NodePool requirement on it.
func TestCatalogTypesChooseTenancy(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	its, err := catalogInstanceTypes(cat, "us-west-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(its) == 0 {
		t.Fatal("no instance types")
	}
	for _, it := range its[:3] {
		if d := cmp.Diff(map[string][]string{awsv1.LabelInstanceTenancy: {"dedicated", "default"}}, it.LaunchLabels); d != "" {
			t.Errorf("%s launch labels (-want +got):\n%s", it.Name, d)
		}
	}
}
