package operator

import (
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		env      map[string]string
		want     int64
		wantSet  bool
		wantFail bool
	}{
		{name: "unset", env: nil},
		{name: "GOMEMLIMIT wins", env: map[string]string{"MEMORY_LIMIT": "167772160", "GOMEMLIMIT": "100MiB"}},
		{name: "160 MiB container: 44 MiB outside the heap", env: map[string]string{"MEMORY_LIMIT": "167772160"}, want: 116 * mib, wantSet: true},
		{name: "1 GiB container: a tenth outside", env: map[string]string{"MEMORY_LIMIT": "1GiB"}, want: 1024*mib - 1024*mib/10, wantSet: true},
		{name: "tiny container: never below half", env: map[string]string{"MEMORY_LIMIT": "64MiB"}, want: 32 * mib, wantSet: true},
		{name: "spaces", env: map[string]string{"MEMORY_LIMIT": " 160MiB "}, want: 116 * mib, wantSet: true},
		{name: "a Kubernetes quantity is not bytes", env: map[string]string{"MEMORY_LIMIT": "160Mi"}, wantFail: true},
		{name: "zero", env: map[string]string{"MEMORY_LIMIT": "0"}, wantFail: true},
		{name: "negative", env: map[string]string{"MEMORY_LIMIT": "-5"}, wantFail: true},
		{name: "overflow", env: map[string]string{"MEMORY_LIMIT": "99999999999TiB"}, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set, err := SoftMemoryLimit(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantFail {
				t.Fatalf("err = %v, want failure %v", err, tt.wantFail)
			}
			if got != tt.want || set != tt.wantSet {
				t.Errorf("SoftMemoryLimit = %d, %v; want %d, %v", got, set, tt.want, tt.wantSet)
			}
		})
	}
}
