package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIAMPolicyFlags(t *testing.T) {
	if _, err := policyVars([]string{"A=1", "B="}); err != nil {
		t.Errorf("policyVars: %v", err)
	}
	if _, err := policyVars([]string{"nope"}); err == nil {
		t.Errorf("policyVars accepted a value without =")
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "p.json")
	if err := os.WriteFile(bad, []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ec2:*","Resource":"${MISSING}"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", freeAddr(t), "--iam-policy-var", "A=1"}, "needs --iam-policy"},
		{[]string{"serve", "--listen", freeAddr(t), "--iam-policy", filepath.Join(dir, "absent.json")}, "--iam-policy"},
		{[]string{"serve", "--listen", freeAddr(t), "--iam-policy", bad}, "MISSING"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("awssim %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}
